// The headers of an arriving frame, read the same way by the tc and the XDP program: Ethernet,
// then IPv4 without options or IPv6 without extension headers, then UDP, every length
// matching the frame's. Included by relay.bpf.c after the kernel headers and fastpath_abi.h.
#ifndef MEDIARELAY_PACKET_H
#define MEDIARELAY_PACKET_H

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

/// Reads the headers of the frame at `data` (linear up to `end`) whose whole length is
/// `frame_length`; -1 when it is not a datagram the fast path may touch.
static __always_inline int parse_frame(void *data, void *end, __u32 frame_length, struct mr_packet *packet)
{
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end)
        return -1;
    packet->l3 = sizeof(*eth);
    if (eth->h_proto == bpf_htons(ETH_P_IP)) {
        struct iphdr *ip = data + sizeof(*eth);
        if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
            return -1;
        __u16 fragment = bpf_ntohs(ip->frag_off);
        if (fragment & 0x1fff)
            return -1;
        // Frames shorter than the minimum Ethernet size arrive padded; only exact ones match.
        if (bpf_ntohs(ip->tot_len) != frame_length - sizeof(*eth))
            return -1;
        packet->more_fragments = (fragment & 0x2000) != 0;
        packet->tos = ip->tos;
        packet->key.family = 4;
        __builtin_memcpy(packet->key.source, &ip->saddr, 4);
        __builtin_memcpy(packet->key.destination, &ip->daddr, 4);
        packet->l4 = sizeof(*eth) + sizeof(*ip);
    } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip = data + sizeof(*eth);
        if ((void *)(ip + 1) > end || ip->nexthdr != IPPROTO_UDP)
            return -1;
        if (bpf_ntohs(ip->payload_len) != frame_length - sizeof(*eth) - sizeof(*ip))
            return -1;
        packet->more_fragments = 0;
        packet->tos = (ip->priority << 4) | (ip->flow_lbl[0] >> 4);
        packet->key.family = 6;
        __builtin_memcpy(packet->key.source, &ip->saddr, 16);
        __builtin_memcpy(packet->key.destination, &ip->daddr, 16);
        packet->l4 = sizeof(*eth) + sizeof(*ip);
    } else {
        return -1;
    }
    struct udphdr *udp = data + packet->l4;
    if ((void *)(udp + 1) > end)
        return -1;
    packet->udp = *udp;
    packet->key.source_port = udp->source;
    packet->key.destination_port = udp->dest;
    __u32 length = bpf_ntohs(udp->len);
    // A first fragment carries the UDP length of the whole datagram; it is looked up (and
    // counted as handed back) but never changed.
    if (length < sizeof(*udp) || (!packet->more_fragments && length != frame_length - packet->l4))
        return -1;
    packet->payload = length - sizeof(*udp);
    return 0;
}

#endif
