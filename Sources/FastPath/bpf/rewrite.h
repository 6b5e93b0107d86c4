// The rewrites of relay.bpf.c: addresses, ports and the traffic class byte, and the
// ChannelData header removed or added, each with its checksums updated from differences.
// Included once, by relay.bpf.c, after the kernel headers and fastpath_abi.h.
#ifndef MEDIARELAY_REWRITE_H
#define MEDIARELAY_REWRITE_H

#define MR_HOP_LIMIT 64
#define MR_CHANNEL_HEADER 4

/// What the parse of the headers found, read before any helper may move the packet.
struct mr_packet {
    __u32 l3;               // offset of the IP header
    __u32 l4;               // offset of the UDP header
    __u32 payload;          // UDP payload length
    __u8 tos;
    __u8 more_fragments;
    struct mr_fp_key key;
    struct udphdr udp;
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

/// Writes the IP header with the entry's addresses, the new traffic class, a fresh hop limit
/// and `ip_payload` bytes after it. The IPv4 header checksum is computed over the 20 bytes.
static __always_inline int write_ip(struct __sk_buff *skb, const struct mr_packet *packet,
                                    const struct mr_fp_entry *entry, __u8 tos, __u32 ip_payload)
{
    if (packet->key.family == 4) {
        struct iphdr ip;
        if (bpf_skb_load_bytes(skb, packet->l3, &ip, sizeof(ip)) < 0)
            return -1;
        ip.tos = tos;
        ip.ttl = MR_HOP_LIMIT;
        ip.tot_len = bpf_htons(sizeof(ip) + ip_payload);
        __builtin_memcpy(&ip.saddr, entry->source, 4);
        __builtin_memcpy(&ip.daddr, entry->destination, 4);
        ip.check = 0;
        __u16 words[10];
        __builtin_memcpy(words, &ip, sizeof(words));
        __u64 sum = 0;
#pragma unroll
        for (int i = 0; i < 10; i++)
            sum += words[i];
        ip.check = (__u16)~fold(sum);
        return bpf_skb_store_bytes(skb, packet->l3, &ip, sizeof(ip), 0);
    }
    struct ipv6hdr ip;
    if (bpf_skb_load_bytes(skb, packet->l3, &ip, sizeof(ip)) < 0)
        return -1;
    ip.priority = tos >> 4;
    ip.flow_lbl[0] = (ip.flow_lbl[0] & 0x0f) | ((tos & 0x0f) << 4);
    ip.hop_limit = MR_HOP_LIMIT;
    ip.payload_len = bpf_htons(ip_payload);
    __builtin_memcpy(&ip.saddr, entry->source, 16);
    __builtin_memcpy(&ip.daddr, entry->destination, 16);
    return bpf_skb_store_bytes(skb, packet->l3, &ip, sizeof(ip), 0);
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

/// Same length, new addresses and ports. The checksum helpers know CHECKSUM_PARTIAL (only the
/// pseudo-header part moves then) and leave an IPv4 zero checksum alone.
static __always_inline int rewrite_plain(struct __sk_buff *skb, const struct mr_packet *packet,
                                         const struct mr_fp_entry *entry, __u8 tos)
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
    return write_ip(skb, packet, entry, tos, sizeof(struct udphdr) + packet->payload);
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

/// Client to peer: the ChannelData header is checked and removed, the payload cut to the length
/// it names. The UDP header moves forward over the ChannelData header first, then the room
/// between the IP and UDP headers shrinks by 4.
static __always_inline int strip_channel(struct __sk_buff *skb, const struct mr_packet *packet,
                                         const struct mr_fp_entry *entry, __u8 tos, const __u8 head[8])
{
    __u16 length = ((__u16)head[2] << 8) | head[3];
    __u32 padding = packet->payload - MR_CHANNEL_HEADER - length;
    __be32 header_word;
    __builtin_memcpy(&header_word, head, 4);
    __u64 removed = (__u64)(header_word & 0xffff) + (header_word >> 16);
    // Padding bytes leave too; each counts as the high or low byte of its 16-bit word.
    if (padding > 0) {
        __u32 start = packet->l4 + sizeof(struct udphdr) + MR_CHANNEL_HEADER + length;
        __u8 bytes[3] = {};
        if (padding >= 3) {
            if (bpf_skb_load_bytes(skb, start, bytes, 3) < 0)
                return -1;
        } else if (padding == 2) {
            if (bpf_skb_load_bytes(skb, start, bytes, 2) < 0)
                return -1;
        } else if (bpf_skb_load_bytes(skb, start, bytes, 1) < 0) {
            return -1;
        }
#pragma unroll
        for (__u32 i = 0; i < 3; i++)
            removed += word_part(bytes[i], length + i);
    }

    struct udphdr header = {
        .source = entry->source_port,
        .dest = entry->destination_port,
        .len = bpf_htons(sizeof(struct udphdr) + length),
    };
    header.check = new_checksum(packet, entry, &header, removed, 0);

    if (padding > 0 && bpf_skb_change_tail(skb, skb->len - padding, 0) < 0)
        return -1;
    if (bpf_skb_store_bytes(skb, packet->l4 + MR_CHANNEL_HEADER, &header, sizeof(header), 0) < 0)
        return -1;
    if (bpf_skb_adjust_room(skb, -MR_CHANNEL_HEADER, BPF_ADJ_ROOM_NET, 0) < 0)
        return -1;
    return write_ip(skb, packet, entry, tos, sizeof(struct udphdr) + length);
}

/// Peer to client: room for the ChannelData header is made between the IP and UDP headers,
/// then the UDP header and the ChannelData header are written over the first 12 bytes.
static __always_inline int add_channel(struct __sk_buff *skb, const struct mr_packet *packet,
                                       const struct mr_fp_entry *entry, __u8 tos)
{
    struct {
        struct udphdr udp;
        __be16 channel;
        __be16 length;
    } headers = {
        .udp = {
            .source = entry->source_port,
            .dest = entry->destination_port,
            .len = bpf_htons(sizeof(struct udphdr) + MR_CHANNEL_HEADER + packet->payload),
        },
        .channel = bpf_htons(entry->channel),
        .length = bpf_htons(packet->payload),
    };
    __u64 added = (__u64)headers.channel + headers.length;
    headers.udp.check = new_checksum(packet, entry, &headers.udp, 0, added);
    if (bpf_skb_adjust_room(skb, MR_CHANNEL_HEADER, BPF_ADJ_ROOM_NET, 0) < 0)
        return -1;
    if (bpf_skb_store_bytes(skb, packet->l4, &headers, sizeof(headers), 0) < 0)
        return -1;
    return write_ip(skb, packet, entry, tos, sizeof(headers) + packet->payload);
}

#endif
