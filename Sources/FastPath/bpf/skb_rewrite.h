// The rewrite in a socket buffer (the tc program): bytes loaded and stored with the skb
// helpers, room made or taken between the IP and UDP headers, and what the kernel holds about
// the datagram's checksum respected. Included by relay.bpf.c after rewrite.h.
#ifndef MEDIARELAY_SKB_REWRITE_H
#define MEDIARELAY_SKB_REWRITE_H

// The kernel's sk_buff, only the field read here; CO-RE finds its place in this kernel.
struct sk_buff___mr {
    __u8 ip_summed:2;
} __attribute__((preserve_access_index));

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

#define MR_CHECKSUM_COMPLETE 2

/// Whether the kernel holds checksum state for this datagram that a change of length would
/// leave wrong: CHECKSUM_PARTIAL (finished later at the old header position) or
/// CHECKSUM_COMPLETE (a sum over the received bytes).
static __always_inline int checksum_pending(struct __sk_buff *skb)
{
    struct sk_buff___mr *kernel = bpf_cast_to_kern_ctx(skb);
    return BPF_CORE_READ_BITFIELD(kernel, ip_summed) >= MR_CHECKSUM_COMPLETE;
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

/// Writes the IP header with the entry's addresses, the new traffic class, a fresh hop limit
/// and `ip_payload` bytes after it.
static __always_inline int skb_write_ip(struct __sk_buff *skb, const struct mr_packet *packet,
                                        const struct mr_fp_entry *entry, __u8 tos, __u32 ip_payload)
{
    if (packet->key.family == 4) {
        struct iphdr ip;
        if (bpf_skb_load_bytes(skb, packet->l3, &ip, sizeof(ip)) < 0)
            return -1;
        set_ipv4(&ip, entry, tos, ip_payload);
        return bpf_skb_store_bytes(skb, packet->l3, &ip, sizeof(ip), 0);
    }
    struct ipv6hdr ip;
    if (bpf_skb_load_bytes(skb, packet->l3, &ip, sizeof(ip)) < 0)
        return -1;
    set_ipv6(&ip, entry, tos, ip_payload);
    return bpf_skb_store_bytes(skb, packet->l3, &ip, sizeof(ip), 0);
}

/// Same length, new addresses and ports. The checksum helpers know CHECKSUM_PARTIAL (only the
/// pseudo-header part moves then) and leave an IPv4 zero checksum alone.
static __always_inline int skb_rewrite_plain(struct __sk_buff *skb, const struct mr_packet *packet,
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
    return skb_write_ip(skb, packet, entry, tos, sizeof(struct udphdr) + packet->payload);
}

/// Client to peer: the ChannelData header (checked by the caller) removed, the payload cut to
/// the length it names. The UDP header moves forward over the ChannelData header first, then
/// the room between the IP and UDP headers shrinks by 4.
static __always_inline int skb_strip_channel(struct __sk_buff *skb, const struct mr_packet *packet,
                                             const struct mr_fp_entry *entry, __u8 tos, const __u8 head[8])
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
    return skb_write_ip(skb, packet, entry, tos, sizeof(struct udphdr) + length);
}

/// Peer to client: room for the ChannelData header is made between the IP and UDP headers,
/// then the UDP header and the ChannelData header are written over the first 12 bytes.
static __always_inline int skb_add_channel(struct __sk_buff *skb, const struct mr_packet *packet,
                                           const struct mr_fp_entry *entry, __u8 tos)
{
    struct mr_channel_headers headers = channel_headers(packet, entry);
    if (bpf_skb_adjust_room(skb, MR_CHANNEL_HEADER, BPF_ADJ_ROOM_NET, 0) < 0)
        return -1;
    if (bpf_skb_store_bytes(skb, packet->l4, &headers, sizeof(headers), 0) < 0)
        return -1;
    return skb_write_ip(skb, packet, entry, tos, sizeof(headers) + packet->payload);
}

#endif
