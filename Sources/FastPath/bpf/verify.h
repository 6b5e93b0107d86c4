// The UDP checksum checked before a datagram is forwarded, as the stack checks it before a
// socket sees it: the payload is copied into a per-CPU buffer (the program's own loads work in
// every container, linear or not) and summed there in pieces bpf_csum_diff takes. Only what
// the kernel has not checked already is summed: tc skips a frame the NIC vouched for
// (CHECKSUM_UNNECESSARY) or whose checksum a sender on this host left to finish
// (CHECKSUM_PARTIAL); XDP sees no such state and sums every one. The same buffer carries the
// payload the CHECKSUM_PARTIAL rewrites move (skb_rewrite.h). Included by relay.bpf.c after
// rewrite.h.
#ifndef MEDIARELAY_VERIFY_H
#define MEDIARELAY_VERIFY_H

/// The most payload bytes the buffer holds: a datagram filling a jumbo frame's MTU (9,000)
/// fits. Larger ones (only `lo` carries them) cannot be checked or moved and are handed back.
#define MR_MOVE_MAX 9216
/// The most bytes one bpf_csum_diff call sums.
#define MR_SUM_PIECE 512

/// Where a payload is held while it is summed or moved: one per CPU, which a program run has
/// to itself from the load to the last use.
struct mr_move_buffer {
    __u8 bytes[MR_MOVE_MAX];
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct mr_move_buffer);
} move_buffer SEC(".maps");

static __always_inline struct mr_move_buffer *payload_buffer(void)
{
    __u32 zero = 0;
    return bpf_map_lookup_elem(&move_buffer, &zero);
}

/// The ones' complement sum (folded) of the first `length` bytes of `buffer`, as 16-bit words
/// read in host order; -1 when a helper refuses. A global function, so that the verifier
/// checks its loop once rather than on every path that reaches it.
__noinline __s64 buffer_sum(struct mr_move_buffer *buffer, __u32 length)
{
    if (!buffer)
        return -1;
    __u64 sum = 0;
    for (__u32 offset = 0; offset < MR_MOVE_MAX; offset += MR_SUM_PIECE) {
        if (offset >= length)
            break;
        __u32 size = length - offset;
        if (size > MR_SUM_PIECE)
            size = MR_SUM_PIECE;
        // bpf_csum_diff takes whole 32-bit words; the last piece's 1-3 bytes after them are
        // added one by one.
        __u32 words = size & ~3u;
        __s64 piece = bpf_csum_diff(NULL, 0, (__be32 *)(buffer->bytes + offset), words, 0);
        if (piece < 0)
            return -1;
        sum += (__u32)piece;
        __u32 tail = size & 3;
        __u32 at = offset + words;
        if (tail >= 1 && at < MR_MOVE_MAX)
            sum += word_part(buffer->bytes[at], at);
        if (tail >= 2 && at + 1 < MR_MOVE_MAX)
            sum += word_part(buffer->bytes[at + 1], at + 1);
        if (tail >= 3 && at + 2 < MR_MOVE_MAX)
            sum += word_part(buffer->bytes[at + 2], at + 2);
    }
    return (__s64)fold(sum);
}

/// Whether the datagram's UDP checksum adds up over the pseudo-header, the UDP header and
/// `payload` (the payload's sum). A zero checksum means "none" over IPv4 and is refused over
/// IPv6 (RFC 8200 section 8.1), as the stack does.
static __always_inline int udp_checksum_valid(const struct mr_packet *packet, __u64 payload)
{
    if (packet->udp.check == 0)
        return packet->key.family == 4;
    __s64 pseudo = pseudo_header_sum(packet->key.family, packet->key.source, packet->key.destination, packet->udp.len);
    if (pseudo < 0)
        return 0;
    __u64 sum = (__u64)pseudo + packet->udp.source + packet->udp.dest + packet->udp.len + packet->udp.check + payload;
    return fold(sum) == 0xffff;
}

/// Whether the datagram's UDP checksum must be refused: -1 when it adds up, else the hand-back
/// reason (a payload too large to sum goes back unchecked). The payload is loaded by the
/// program's own helper, `xdp` saying which (a constant: the other call is compiled away).
static __always_inline int udp_checksum_refusal(void *context, const struct mr_packet *packet, int xdp)
{
    if (packet->udp.check == 0)
        return packet->key.family == 4 ? -1 : MR_FP_BACK_BAD_CHECKSUM;
    struct mr_move_buffer *buffer = payload_buffer();
    __u32 length = packet->payload;
    if (!buffer || length > MR_MOVE_MAX)
        return MR_FP_BACK_CHECKSUM_STATE;
    __s64 sum = 0;
    if (length > 0) {
        __u32 offset = packet->l4 + sizeof(struct udphdr);
        long loaded = xdp ? bpf_xdp_load_bytes(context, offset, buffer->bytes, length)
                          : bpf_skb_load_bytes(context, offset, buffer->bytes, length);
        if (loaded < 0)
            return MR_FP_BACK_MALFORMED;
        sum = buffer_sum(buffer, length);
    }
    return sum >= 0 && udp_checksum_valid(packet, (__u64)sum) ? -1 : MR_FP_BACK_BAD_CHECKSUM;
}

#endif
