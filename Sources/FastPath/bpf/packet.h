// The headers of an arriving frame, read the same way by the tc and the XDP program: Ethernet
// (with at most one VLAN tag, noted so that the frame is handed back), then IPv4 without
// options or IPv6 without extension headers, then UDP, every length matching the frame's.
// Included by relay.bpf.c after the kernel headers and fastpath_abi.h.
#ifndef MEDIARELAY_PACKET_H
#define MEDIARELAY_PACKET_H

/// What the parse of the headers found, read before any helper may move the packet.
struct mr_packet {
    __u32 l3;               // offset of the IP header
    __u32 l4;               // offset of the UDP header
    __u32 payload;          // UDP payload length
    __u8 tos;
    __u8 more_fragments;
    /// An 802.1Q or 802.1ad tag sat between the Ethernet and the IP header.
    __u8 tagged;
    /// The IP header is one the stack accepts: its version the ethertype's and, for IPv4,
    /// its checksum right.
    __u8 header_ok;
    struct mr_fp_key key;
    struct udphdr udp;
};

/// The ones' complement sum of the 20-byte IPv4 header at `ip`, folded to 16 bits: all ones
/// for a header whose checksum is right; its complement is the checksum of one whose checksum
/// field is zero.
static __always_inline __u16 ipv4_header_sum(const struct iphdr *ip)
{
    __u16 words[10];
    __builtin_memcpy(words, ip, sizeof(words));
    __u32 sum = 0;
#pragma unroll
    for (int i = 0; i < 10; i++)
        sum += words[i];
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (__u16)sum;
}

/// Reads the headers of the frame at `data` (linear up to `end`) whose whole length is
/// `frame_length`; -1 when it is not a datagram the fast path may touch.
static __always_inline int parse_frame(void *data, void *end, __u32 frame_length, struct mr_packet *packet)
{
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end)
        return -1;
    packet->l3 = sizeof(*eth);
    __be16 protocol = eth->h_proto;
    if (protocol == bpf_htons(ETH_P_8021Q) || protocol == bpf_htons(ETH_P_8021AD)) {
        // The tag's control information, then the ethertype it carries.
        __be16 *tag = data + sizeof(*eth);
        if ((void *)(tag + 2) > end)
            return -1;
        protocol = tag[1];
        packet->tagged = 1;
        packet->l3 += 4;
    }
    if (protocol == bpf_htons(ETH_P_IP)) {
        struct iphdr *ip = data + packet->l3;
        if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
            return -1;
        __u16 fragment = bpf_ntohs(ip->frag_off);
        if (fragment & 0x1fff)
            return -1;
        // Frames shorter than the minimum Ethernet size arrive padded; only exact ones match.
        if (bpf_ntohs(ip->tot_len) != frame_length - packet->l3)
            return -1;
        packet->header_ok = ip->version == 4 && ipv4_header_sum(ip) == 0xffff;
        packet->more_fragments = (fragment & 0x2000) != 0;
        packet->tos = ip->tos;
        packet->key.family = 4;
        __builtin_memcpy(packet->key.source, &ip->saddr, 4);
        __builtin_memcpy(packet->key.destination, &ip->daddr, 4);
        packet->l4 = packet->l3 + sizeof(*ip);
    } else if (protocol == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr *ip = data + packet->l3;
        if ((void *)(ip + 1) > end || ip->nexthdr != IPPROTO_UDP)
            return -1;
        if (bpf_ntohs(ip->payload_len) != frame_length - packet->l3 - sizeof(*ip))
            return -1;
        packet->header_ok = ip->version == 6;
        packet->more_fragments = 0;
        packet->tos = (ip->priority << 4) | (ip->flow_lbl[0] >> 4);
        packet->key.family = 6;
        __builtin_memcpy(packet->key.source, &ip->saddr, 16);
        __builtin_memcpy(packet->key.destination, &ip->daddr, 16);
        packet->l4 = packet->l3 + sizeof(*ip);
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
