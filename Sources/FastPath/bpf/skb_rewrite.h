// The rewrite in a socket buffer (the tc program): bytes loaded and stored with the skb
// helpers, and what the kernel holds about the datagram's checksum respected. A datagram that
// changes length (a ChannelData header removed or added) does so one of two ways. With no
// checksum state held, room is made or taken between the IP and UDP headers and the checksum
// updated from differences. With the checksum left to the kernel to finish (CHECKSUM_PARTIAL:
// a sender on this host with transmit offload on), the kernel will sum the bytes from the UDP
// header's place to the end and store the result at a place it keeps apart from the packet;
// so the headers stay where they are, the payload moves by 4 bytes instead, and the checksum
// field gets what that sum must start from: the new pseudo-header's sum. Included by
// relay.bpf.c after rewrite.h.
#ifndef MEDIARELAY_SKB_REWRITE_H
#define MEDIARELAY_SKB_REWRITE_H

// The kernel's sk_buff, only the fields read here; CO-RE finds their place in this kernel
// (csum_start and csum_offset inside an anonymous union).
struct sk_buff___mr {
    __u8 ip_summed:2;
    __u16 csum_start;
    __u16 csum_offset;
    unsigned char *head;
    unsigned char *data;
} __attribute__((preserve_access_index));

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

#define MR_CHECKSUM_UNNECESSARY 1
#define MR_CHECKSUM_COMPLETE 2
#define MR_CHECKSUM_PARTIAL 3

/// How a datagram that changes length by the ChannelData header is rewritten.
enum mr_resize {
    /// Room made or taken between the IP and UDP headers.
    MR_RESIZE_ROOM = 0,
    /// The headers kept in place and the payload moved (CHECKSUM_PARTIAL).
    MR_RESIZE_MOVE = 1,
};

/// How this datagram may change length, in `*method`: MR_RESIZE_ROOM when the kernel holds no
/// checksum state for it; MR_RESIZE_MOVE when its checksum is left to finish
/// (CHECKSUM_PARTIAL) from exactly its UDP header, the `moved` payload bytes fit the move
/// buffer, and, when the header is added, the arriving interface's MTU allows 4 bytes more
/// (the tail grows while the datagram is still that interface's). -1 to go on, else the
/// hand-back reason: a sum over the frame (CHECKSUM_COMPLETE) or a CHECKSUM_PARTIAL datagram
/// the move cannot carry.
static __always_inline int skb_resize_refusal(struct __sk_buff *skb, const struct mr_packet *packet,
                                              const struct mr_fp_entry *entry, __u32 moved, int *method)
{
    struct sk_buff___mr *kernel = bpf_cast_to_kern_ctx(skb);
    __u8 state = BPF_CORE_READ_BITFIELD(kernel, ip_summed);
    *method = MR_RESIZE_ROOM;
    if (state < MR_CHECKSUM_COMPLETE)
        return -1;
    if (state == MR_CHECKSUM_COMPLETE)
        return MR_FP_BACK_CHECKSUM_STATE;
    // tc sees the frame from its Ethernet header, at skb->data; csum_start counts from head.
    __u32 start = kernel->csum_start - (__u32)(kernel->data - kernel->head);
    if (start != packet->l4 || kernel->csum_offset != offsetof(struct udphdr, check) || moved > MR_MOVE_MAX)
        return MR_FP_BACK_CHECKSUM_STATE;
    __u32 mtu = 0;
    if (entry->kind == MR_FP_KIND_CHANNEL_ADD
        && bpf_check_mtu(skb, 0, &mtu, MR_CHANNEL_HEADER, 0) != BPF_MTU_CHK_RET_SUCCESS)
        return MR_FP_BACK_TOO_LARGE;
    *method = MR_RESIZE_MOVE;
    return -1;
}

/// Copies `length` bytes at `from` to `to` through this CPU's move buffer; the ranges may
/// overlap.
static __always_inline int skb_move(struct __sk_buff *skb, __u32 from, __u32 to, __u32 length)
{
    struct mr_move_buffer *buffer = payload_buffer();
    if (!buffer || length > MR_MOVE_MAX)
        return -1;
    if (length == 0)
        return 0;
    if (bpf_skb_load_bytes(skb, from, buffer->bytes, length) < 0)
        return -1;
    return bpf_skb_store_bytes(skb, to, buffer->bytes, length, 0);
}

/// Whether the datagram's UDP checksum must be refused: -1 when the kernel already vouched for
/// it (CHECKSUM_UNNECESSARY) or will finish it (CHECKSUM_PARTIAL), else as udp_checksum_refusal
/// says.
static __always_inline int skb_checksum_refusal(struct __sk_buff *skb, const struct mr_packet *packet)
{
    struct sk_buff___mr *kernel = bpf_cast_to_kern_ctx(skb);
    __u8 state = BPF_CORE_READ_BITFIELD(kernel, ip_summed);
    if (state == MR_CHECKSUM_UNNECESSARY || state == MR_CHECKSUM_PARTIAL)
        return -1;
    return udp_checksum_refusal(skb, packet, 0);
}

/// The first payload bytes, as many as there are up to 8 (the rest zero).
static __always_inline void skb_payload_head(struct __sk_buff *skb, const struct mr_packet *packet, __u8 head[8])
{
    __u32 offset = packet->l4 + sizeof(struct udphdr);
    if (packet->payload >= 8)
        bpf_skb_load_bytes(skb, offset, head, 8);
    else if (packet->payload >= 4)
        bpf_skb_load_bytes(skb, offset, head, 4);
}

/// Writes the IP header with the entry's addresses, the new traffic class, the hop limit
/// and `ip_payload` bytes after it.
static __always_inline int skb_write_ip(struct __sk_buff *skb, const struct mr_packet *packet,
                                        const struct mr_fp_entry *entry, const struct mr_out *out, __u32 ip_payload)
{
    if (packet->key.family == 4) {
        struct iphdr ip;
        if (bpf_skb_load_bytes(skb, packet->l3, &ip, sizeof(ip)) < 0)
            return -1;
        set_ipv4(&ip, entry, out->tos, ip_payload, out->hop_limit);
        return bpf_skb_store_bytes(skb, packet->l3, &ip, sizeof(ip), 0);
    }
    struct ipv6hdr ip;
    if (bpf_skb_load_bytes(skb, packet->l3, &ip, sizeof(ip)) < 0)
        return -1;
    set_ipv6(&ip, entry, out->tos, ip_payload, out->hop_limit);
    return bpf_skb_store_bytes(skb, packet->l3, &ip, sizeof(ip), 0);
}

/// Same length, new addresses and ports. The checksum helpers know CHECKSUM_PARTIAL (only the
/// pseudo-header part moves then) and leave an IPv4 zero checksum alone.
static __always_inline int skb_rewrite_plain(struct __sk_buff *skb, const struct mr_packet *packet,
                                             const struct mr_fp_entry *entry, const struct mr_out *out)
{
    __u32 check = packet->l4 + offsetof(struct udphdr, check);
    __s64 addresses = address_difference(packet, entry);
    __be32 old_ports = ((__be32)packet->udp.dest << 16) | packet->udp.source;
    __be32 new_ports = ((__be32)entry->destination_port << 16) | entry->source_port;
    __s64 ports = bpf_csum_diff(&old_ports, 4, &new_ports, 4, 0);
    if (addresses < 0 || ports < 0)
        return -1;
    if (bpf_l4_csum_replace(skb, check, 0, addresses, BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0) < 0)
        return -1;
    if (bpf_l4_csum_replace(skb, check, 0, ports, BPF_F_MARK_MANGLED_0) < 0)
        return -1;
    __be16 ports_out[2] = { entry->source_port, entry->destination_port };
    if (bpf_skb_store_bytes(skb, packet->l4, ports_out, sizeof(ports_out), 0) < 0)
        return -1;
    return skb_write_ip(skb, packet, entry, out, sizeof(struct udphdr) + packet->payload);
}

/// Client to peer with no checksum state held: the ChannelData header (checked by the caller)
/// removed, the payload cut to the length it names. The UDP header moves forward over the
/// ChannelData header first, then the room between the IP and UDP headers shrinks by 4.
static __always_inline int skb_strip_channel(struct __sk_buff *skb, const struct mr_packet *packet,
                                             const struct mr_fp_entry *entry, const struct mr_out *out, const __u8 head[8])
{
    __u16 length = ((__u16)head[2] << 8) | head[3];
    __u32 padding = packet->payload - MR_CHANNEL_HEADER - length;
    __u8 bytes[3] = {};
    if (padding > 0) {
        __u32 start = packet->l4 + sizeof(struct udphdr) + MR_CHANNEL_HEADER + length;
        int loaded;
        if (padding >= 3)
            loaded = bpf_skb_load_bytes(skb, start, bytes, 3);
        else if (padding == 2)
            loaded = bpf_skb_load_bytes(skb, start, bytes, 2);
        else
            loaded = bpf_skb_load_bytes(skb, start, bytes, 1);
        if (loaded < 0)
            return -1;
    }
    struct udphdr header = rewritten_udp(entry, length);
    header.check = new_checksum(packet, entry, &header, channel_removed(head, length, bytes), 0);

    if (padding > 0 && bpf_skb_change_tail(skb, skb->len - padding, 0) < 0)
        return -1;
    if (bpf_skb_store_bytes(skb, packet->l4 + MR_CHANNEL_HEADER, &header, sizeof(header), 0) < 0)
        return -1;
    if (bpf_skb_adjust_room(skb, -MR_CHANNEL_HEADER, BPF_ADJ_ROOM_NET, 0) < 0)
        return -1;
    return skb_write_ip(skb, packet, entry, out, sizeof(struct udphdr) + length);
}

/// Peer to client with no checksum state held: room for the ChannelData header is made
/// between the IP and UDP headers, then the UDP header and the ChannelData header are written
/// over the first 12 bytes.
static __always_inline int skb_add_channel(struct __sk_buff *skb, const struct mr_packet *packet,
                                           const struct mr_fp_entry *entry, const struct mr_out *out)
{
    struct mr_channel_headers headers = channel_headers(packet, entry);
    if (bpf_skb_adjust_room(skb, MR_CHANNEL_HEADER, BPF_ADJ_ROOM_NET, 0) < 0)
        return -1;
    if (bpf_skb_store_bytes(skb, packet->l4, &headers, sizeof(headers), 0) < 0)
        return -1;
    return skb_write_ip(skb, packet, entry, out, sizeof(headers) + packet->payload);
}

/// The UDP header a CHECKSUM_PARTIAL datagram leaves with: the entry's ports, `length`
/// payload bytes, and in the checksum field the sum the kernel finishes from, the new
/// pseudo-header's (ports and payload it sums itself). Not 0 ("no checksum" in IPv4), which
/// a pseudo-header's sum never is.
static __always_inline int partial_udp(const struct mr_packet *packet, const struct mr_fp_entry *entry, __u32 length,
                                       struct udphdr *header)
{
    *header = rewritten_udp(entry, length);
    __s64 sum = pseudo_header_sum(packet->key.family, entry->source, entry->destination, header->len);
    if (sum < 0)
        return -1;
    header->check = (__u16)sum;
    return 0;
}

/// Client to peer with the checksum left to finish: the payload of `length` bytes moves 4
/// bytes towards the UDP header, over the ChannelData header, the tail is cut after it
/// (the 4 bytes and any padding), and the headers are rewritten where they are.
static __always_inline int skb_strip_channel_moving(struct __sk_buff *skb, const struct mr_packet *packet,
                                                    const struct mr_fp_entry *entry, const struct mr_out *out, const __u8 head[8])
{
    __u16 length = ((__u16)head[2] << 8) | head[3];
    __u32 payload = packet->l4 + sizeof(struct udphdr);
    struct udphdr header;
    if (partial_udp(packet, entry, length, &header) < 0)
        return -1;
    if (skb_move(skb, payload + MR_CHANNEL_HEADER, payload, length) < 0)
        return -1;
    if (bpf_skb_change_tail(skb, payload + length, 0) < 0)
        return -1;
    if (bpf_skb_store_bytes(skb, packet->l4, &header, sizeof(header), 0) < 0)
        return -1;
    return skb_write_ip(skb, packet, entry, out, sizeof(struct udphdr) + length);
}

/// Peer to client with the checksum left to finish: the tail grows by 4 bytes, the payload
/// moves 4 bytes towards it, and the UDP and ChannelData headers are written where the UDP
/// header was and the payload began.
static __always_inline int skb_add_channel_moving(struct __sk_buff *skb, const struct mr_packet *packet,
                                                  const struct mr_fp_entry *entry, const struct mr_out *out)
{
    __u32 payload = packet->l4 + sizeof(struct udphdr);
    struct mr_channel_headers headers = {
        .channel = bpf_htons(entry->channel),
        .length = bpf_htons(packet->payload),
    };
    if (partial_udp(packet, entry, MR_CHANNEL_HEADER + packet->payload, &headers.udp) < 0)
        return -1;
    if (bpf_skb_change_tail(skb, payload + packet->payload + MR_CHANNEL_HEADER, 0) < 0)
        return -1;
    if (skb_move(skb, payload, payload + MR_CHANNEL_HEADER, packet->payload) < 0)
        return -1;
    if (bpf_skb_store_bytes(skb, packet->l4, &headers, sizeof(headers), 0) < 0)
        return -1;
    return skb_write_ip(skb, packet, entry, out, sizeof(headers) + packet->payload);
}

#endif
