// The rewrite in an XDP frame (the XDP program): the Ethernet, IP and UDP headers loaded into
// the stack, rewritten there (rewrite.h), and stored back after the frame's head moved by the
// ChannelData header's 4 bytes (bpf_xdp_adjust_head) or its padding was cut
// (bpf_xdp_adjust_tail). The frame is sent on by bpf_redirect, so the Ethernet addresses come
// from the route. Included by relay.bpf.c after flow.h.
#ifndef MEDIARELAY_XDP_REWRITE_H
#define MEDIARELAY_XDP_REWRITE_H

/// The IP and UDP headers, for either family. The Ethernet header is kept apart: its 14
/// bytes would leave the IP header unaligned on the stack.
union mr_frame {
    struct {
        struct iphdr ip;
        struct udphdr udp;
    } v4;
    struct {
        struct ipv6hdr ip;
        struct udphdr udp;
    } v6;
};

/// The first payload bytes, as many as there are up to 8 (the rest zero).
static __always_inline void xdp_payload_head(struct xdp_md *context, const struct mr_packet *packet, __u8 head[8])
{
    __u32 offset = packet->l4 + sizeof(struct udphdr);
    if (packet->payload >= 8)
        bpf_xdp_load_bytes(context, offset, head, 8);
    else if (packet->payload >= 4)
        bpf_xdp_load_bytes(context, offset, head, 4);
}

/// Whether the frame is addressed to the link address of the interface it arrived on (not
/// another host's, a broadcast or a multicast), as the stack's packet type says under tc.
static __always_inline int xdp_for_host(struct xdp_md *context, __u32 ifindex)
{
    void *data = (void *)(long)context->data;
    void *end = (void *)(long)context->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end)
        return 0;
    struct mr_fp_interface *interface = bpf_map_lookup_elem(&interfaces, &ifindex);
    if (!interface)
        return 0;
    return __builtin_memcmp(eth->h_dest, interface->mac, ETH_ALEN) == 0;
}

/// The up to 3 padding bytes after a ChannelData payload of `length` bytes (the rest zero).
static __always_inline int xdp_padding(struct xdp_md *context, const struct mr_packet *packet, __u16 length,
                                       __u32 padding, __u8 bytes[3])
{
    __u32 start = packet->l4 + sizeof(struct udphdr) + MR_CHANNEL_HEADER + length;
    if (padding >= 3)
        return bpf_xdp_load_bytes(context, start, bytes, 3);
    if (padding == 2)
        return bpf_xdp_load_bytes(context, start, bytes, 2);
    if (padding == 1)
        return bpf_xdp_load_bytes(context, start, bytes, 1);
    return 0;
}

/// Rewrites the frame for `entry` (its ChannelData header checked by the caller) and, unless
/// it stays in this host, addresses it to the route's next hop.
static __always_inline int xdp_rewrite(struct xdp_md *context, const struct mr_packet *packet,
                                       const struct mr_fp_entry *entry, const struct mr_out *out, const __u8 head[8],
                                       const struct mr_route *route)
{
    int ipv4 = packet->key.family == 4;
    struct ethhdr eth;
    union mr_frame frame;
    if (bpf_xdp_load_bytes(context, 0, &eth, sizeof(eth)) < 0)
        return -1;
    if ((ipv4 ? bpf_xdp_load_bytes(context, sizeof(eth), &frame, sizeof(frame.v4))
              : bpf_xdp_load_bytes(context, sizeof(eth), &frame, sizeof(frame.v6))) < 0)
        return -1;

    __u32 payload = packet->payload;
    struct udphdr udp;
    struct mr_channel_headers channel = {};
    if (entry->kind == MR_FP_KIND_CHANNEL_STRIP) {
        __u16 length = ((__u16)head[2] << 8) | head[3];
        __u32 padding = packet->payload - MR_CHANNEL_HEADER - length;
        __u8 bytes[3] = {};
        if (xdp_padding(context, packet, length, padding, bytes) < 0)
            return -1;
        udp = rewritten_udp(entry, length);
        udp.check = new_checksum(packet, entry, &udp, channel_removed(head, length, bytes), 0);
        if (padding > 0 && bpf_xdp_adjust_tail(context, -(int)padding) < 0)
            return -1;
        // The headers are written again 4 bytes further on, over the ChannelData header.
        if (bpf_xdp_adjust_head(context, MR_CHANNEL_HEADER) < 0)
            return -1;
        payload = length;
    } else if (entry->kind == MR_FP_KIND_CHANNEL_ADD) {
        channel = channel_headers(packet, entry);
        udp = channel.udp;
        if (bpf_xdp_adjust_head(context, -MR_CHANNEL_HEADER) < 0)
            return -1;
        payload += MR_CHANNEL_HEADER;
    } else {
        udp = rewritten_udp(entry, payload);
        udp.check = new_checksum(packet, entry, &udp, 0, 0);
    }

    if (!route->local) {
        __builtin_memcpy(eth.h_dest, route->destination_mac, ETH_ALEN);
        __builtin_memcpy(eth.h_source, route->source_mac, ETH_ALEN);
    }
    int stored;
    if (ipv4) {
        set_ipv4(&frame.v4.ip, entry, out->tos, sizeof(udp) + payload, out->hop_limit);
        frame.v4.udp = udp;
        stored = bpf_xdp_store_bytes(context, sizeof(eth), &frame, sizeof(frame.v4));
    } else {
        set_ipv6(&frame.v6.ip, entry, out->tos, sizeof(udp) + payload, out->hop_limit);
        frame.v6.udp = udp;
        stored = bpf_xdp_store_bytes(context, sizeof(eth), &frame, sizeof(frame.v6));
    }
    if (stored < 0 || bpf_xdp_store_bytes(context, 0, &eth, sizeof(eth)) < 0)
        return -1;
    if (entry->kind == MR_FP_KIND_CHANNEL_ADD)
        return bpf_xdp_store_bytes(context, packet->l4 + sizeof(struct udphdr), &channel.channel, MR_CHANNEL_HEADER);
    return 0;
}

#endif
