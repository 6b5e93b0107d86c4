// The rewrite as values, the same for the tc and the XDP program: the traffic class byte, the
// new IP header, and the UDP checksum updated from differences (RFC 1624), never recomputed
// over the payload. How the bytes get into the packet is skb_rewrite.h's and xdp_rewrite.h's.
// Included by relay.bpf.c after packet.h.
#ifndef MEDIARELAY_REWRITE_H
#define MEDIARELAY_REWRITE_H

#define MR_CHANNEL_HEADER 4
#define MR_IPV4_DONT_FRAGMENT 0x4000

/// A UDP header with a ChannelData header after it, as the peer-to-client rewrite writes them.
struct mr_channel_headers {
    struct udphdr udp;
    __be16 channel;
    __be16 length;
};

/// What the rewritten IP header carries besides the entry's addresses: the traffic class byte
/// by the entry's policy, and the TTL or hop limit the relay's own socket would send with.
struct mr_out {
    __u8 tos;
    __u8 hop_limit;
};

static __always_inline __u32 fold(__u64 sum)
{
    sum = (sum & 0xffffffff) + (sum >> 32);
    sum = (sum & 0xffffffff) + (sum >> 32);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (__u32)sum;
}

/// The traffic class byte to send: DSCP by the entry's policy, ECN copied or cleared.
static __always_inline __u8 traffic_class(const struct mr_fp_entry *entry, __u8 tos)
{
    __u8 dscp = tos >> 2;
    if (entry->dscp_mode == MR_FP_DSCP_CLASS)
        dscp = entry->dscp_value & 0x3f;
    else if (entry->dscp_mode == MR_FP_DSCP_ZERO)
        dscp = 0;
    __u8 ecn = entry->ecn_mode == MR_FP_ECN_CLEAR ? 0 : (tos & 3);
    return (dscp << 2) | ecn;
}

/// The IPv4 header `ip` with the entry's addresses, the new traffic class, the TTL the relay's
/// sockets send with (`hop_limit`), DF as the entry says (no fragment: the program forwards
/// none) and `ip_payload` bytes after it; its checksum computed over the 20 bytes.
static __always_inline void set_ipv4(struct iphdr *ip, const struct mr_fp_entry *entry, __u8 tos, __u32 ip_payload,
                                     __u8 hop_limit)
{
    ip->tos = tos;
    ip->ttl = hop_limit;
    ip->frag_off = entry->flags & MR_FP_FLAG_DONT_FRAGMENT ? bpf_htons(MR_IPV4_DONT_FRAGMENT) : 0;
    ip->tot_len = bpf_htons(sizeof(*ip) + ip_payload);
    __builtin_memcpy(&ip->saddr, entry->source, 4);
    __builtin_memcpy(&ip->daddr, entry->destination, 4);
    ip->check = 0;
    ip->check = (__u16)~ipv4_header_sum(ip);
}

/// The same for an IPv6 header (no checksum of its own), with the entry's flow label, not the
/// sender's.
static __always_inline void set_ipv6(struct ipv6hdr *ip, const struct mr_fp_entry *entry, __u8 tos, __u32 ip_payload,
                                     __u8 hop_limit)
{
    ip->priority = tos >> 4;
    ip->flow_lbl[0] = ((tos & 0x0f) << 4) | ((entry->flow_label >> 16) & 0x0f);
    ip->flow_lbl[1] = (entry->flow_label >> 8) & 0xff;
    ip->flow_lbl[2] = entry->flow_label & 0xff;
    ip->hop_limit = hop_limit;
    ip->payload_len = bpf_htons(ip_payload);
    __builtin_memcpy(&ip->saddr, entry->source, 16);
    __builtin_memcpy(&ip->daddr, entry->destination, 16);
}

/// `byte` at `offset` from an even position, as it adds to a sum of 16-bit words read in host
/// order.
static __always_inline __u64 word_part(__u8 byte, __u32 offset)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (__u64)byte << ((offset & 1) * 8);
#else
    return (__u64)byte << ((~offset & 1) * 8);
#endif
}

/// The checksum difference of the pseudo-header's addresses, old to new.
static __always_inline __s64 address_difference(const struct mr_packet *packet, const struct mr_fp_entry *entry)
{
    __u32 size = packet->key.family == 4 ? 4 : 16;
    __be32 from[8] = {}, to[8] = {};
    __builtin_memcpy(from, packet->key.source, 16);
    __builtin_memcpy(from + 4, packet->key.destination, 16);
    __builtin_memcpy(to, entry->source, 16);
    __builtin_memcpy(to + 4, entry->destination, 16);
    if (size == 4) {
        from[1] = from[4];
        to[1] = to[4];
        return bpf_csum_diff(from, 8, to, 8, 0);
    }
    return bpf_csum_diff(from, 32, to, 32, 0);
}

/// The UDP checksum after the header changes to `header` and the pseudo-header to the
/// entry's addresses and the new length, with `removed` (ones' complement sum of payload
/// bytes that left) and `added` (of bytes that came). Payload bytes that stay move by a
/// multiple of 2, so their sum does not change. An IPv4 zero checksum ("none") stays zero.
static __always_inline __u16 new_checksum(const struct mr_packet *packet, const struct mr_fp_entry *entry,
                                          const struct udphdr *header, __u64 removed, __u64 added)
{
    __u16 old = packet->udp.check;
    if (old == 0 && packet->key.family == 4)
        return 0;
    __s64 addresses = address_difference(packet, entry);
    __u64 sum = (__u16)~old;
    sum += fold((__u64)addresses);
    // The length appears twice: in the header and in the pseudo-header.
    sum += 2 * (__u64)(__u16)~packet->udp.len + 2 * (__u64)header->len;
    sum += (__u16)~packet->udp.source + (__u64)(__u16)~packet->udp.dest;
    sum += header->source + (__u64)header->dest;
    sum += (__u16)~fold(removed);
    sum += added;
    __u16 result = (__u16)~fold(sum);
    return result == 0 ? 0xffff : result;
}

/// The folded ones' complement sum of a UDP pseudo-header: `source` and `destination` (4 or
/// 16 bytes of each used, by `family`), the protocol, and `length` as it stands in the UDP
/// header. What the checksum field holds while the checksum is left to finish. -1 when the
/// sum cannot be had.
static __always_inline __s64 pseudo_header_sum(__u8 family, const __u8 source[16], const __u8 destination[16],
                                               __be16 length)
{
    __u32 addresses[8] = {};
    __builtin_memcpy(addresses, source, 16);
    __builtin_memcpy(addresses + 4, destination, 16);
    __s64 sum;
    if (family == 4) {
        addresses[1] = addresses[4];
        sum = bpf_csum_diff(NULL, 0, addresses, 8, 0);
    } else {
        sum = bpf_csum_diff(NULL, 0, addresses, 32, 0);
    }
    if (sum < 0)
        return -1;
    return fold((__u64)(__u32)sum + bpf_htons(IPPROTO_UDP) + length);
}

/// Whether the UDP checksum field holds only the pseudo-header's sum, as it does while the
/// checksum is left to the kernel or the NIC to finish (CHECKSUM_PARTIAL: a local sender on
/// veth with offload on). XDP sees no socket buffer to ask, and a frame it redirects arrives
/// as one whose checksum is complete, so such a datagram must go to user space instead. A
/// finished checksum equals this value once in 65,536: that datagram is handed back too, which
/// is always safe.
static __always_inline int checksum_left_to_finish(const struct mr_packet *packet)
{
    __u16 check = packet->udp.check;
    if (check == 0 && packet->key.family == 4)
        return 0;
    __s64 sum = pseudo_header_sum(packet->key.family, packet->key.source, packet->key.destination, packet->udp.len);
    if (sum < 0)
        return 1;
    __u16 pseudo = (__u16)sum;
    // 0 and 0xffff are the same number in ones' complement.
    return check == pseudo || (check == 0xffff && pseudo == 0) || (check == 0 && pseudo == 0xffff);
}

/// The UDP header that carries the payload of `length` bytes on to the entry's destination.
static __always_inline struct udphdr rewritten_udp(const struct mr_fp_entry *entry, __u32 length)
{
    struct udphdr header = {
        .source = entry->source_port,
        .dest = entry->destination_port,
        .len = bpf_htons(sizeof(struct udphdr) + length),
    };
    return header;
}

/// The ones' complement sum of what leaves with the ChannelData header: the header's 4 bytes
/// and up to 3 padding bytes after `length` bytes of payload, each the high or low byte of its
/// 16-bit word.
static __always_inline __u64 channel_removed(const __u8 head[8], __u16 length, const __u8 padding[3])
{
    __be32 header_word;
    __builtin_memcpy(&header_word, head, 4);
    __u64 removed = (__u64)(header_word & 0xffff) + (header_word >> 16);
#pragma unroll
    for (__u32 i = 0; i < 3; i++)
        removed += word_part(padding[i], length + i);
    return removed;
}

/// The UDP and ChannelData headers put in front of a peer's payload, checksum included.
static __always_inline struct mr_channel_headers channel_headers(const struct mr_packet *packet,
                                                                 const struct mr_fp_entry *entry)
{
    struct mr_channel_headers headers = {
        .udp = rewritten_udp(entry, MR_CHANNEL_HEADER + packet->payload),
        .channel = bpf_htons(entry->channel),
        .length = bpf_htons(packet->payload),
    };
    __u64 added = (__u64)headers.channel + headers.length;
    headers.udp.check = new_checksum(packet, entry, &headers.udp, 0, added);
    return headers;
}

#endif
