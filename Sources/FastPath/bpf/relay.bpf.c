// mediarelay's kernel fast path: a tc program (tcx ingress) that forwards the datagrams of
// flows user space has already decided, and passes everything else on untouched to the
// relay's sockets. "Untouched" returns TC_ACT_UNSPEC, tcx's "next": a program attached after
// this one (another relay's) still sees the datagram, and with none it goes up the stack.
// The layout of its maps is fastpath_abi.h, shared with FastPath.
//
// Rules it keeps:
// - Anything it is not sure of goes to user space unmodified: non-UDP, IP options, fragments,
//   IPv6 extension headers, GSO/GRO packets, unknown 5-tuples, STUN messages, expired or idle
//   entries, credit that does not cover the datagram, no route for it, lengths that do not add
//   up. Handing back is always safe: user space does what it does today. What decides (the
//   entry, its checks, route, credit and counts) is flow.h, shared with the XDP program.
// - Every checksum is updated from differences (RFC 1624), never recomputed over the payload.
//   When a datagram changes length and the kernel holds checksum state for it (the sender
//   left the checksum to the kernel, CHECKSUM_PARTIAL, which would be finished at the old
//   header position; or the NIC summed the frame, CHECKSUM_COMPLETE), it is handed back.
// - Packet pointers are read once at the start; after a helper that may move the packet only
//   offsets are used.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "fastpath_abi.h"
#include "rewrite.h"
#include "flow.h"

char LICENSE[] SEC("license") = "GPL";

// The kernel's sk_buff, only the field read here; CO-RE finds its place in this kernel.
struct sk_buff___mr {
    __u8 ip_summed:2;
} __attribute__((preserve_access_index));

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

#define MR_CHECKSUM_COMPLETE 2

static __always_inline int parse(struct __sk_buff *skb, struct mr_packet *packet)
{
    void *data = (void *)(long)skb->data;
    void *end = (void *)(long)skb->data_end;
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
        if (bpf_ntohs(ip->tot_len) != skb->len - sizeof(*eth))
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
        if (bpf_ntohs(ip->payload_len) != skb->len - sizeof(*eth) - sizeof(*ip))
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
    if (length < sizeof(*udp) || (!packet->more_fragments && length != skb->len - packet->l4))
        return -1;
    packet->payload = length - sizeof(*udp);
    return 0;
}

/// Whether the kernel holds checksum state for this datagram that a change of length would
/// leave wrong: CHECKSUM_PARTIAL (finished later at the old header position) or
/// CHECKSUM_COMPLETE (a sum over the received bytes).
static __always_inline int checksum_pending(struct __sk_buff *skb)
{
    struct sk_buff___mr *kernel = bpf_cast_to_kern_ctx(skb);
    return BPF_CORE_READ_BITFIELD(kernel, ip_summed) >= MR_CHECKSUM_COMPLETE;
}

/// The first payload bytes, as many as there are up to 8 (the rest zero).
static __always_inline void payload_head(struct __sk_buff *skb, const struct mr_packet *packet, __u8 head[8])
{
    __u32 offset = packet->l4 + sizeof(struct udphdr);
    if (packet->payload >= 8)
        bpf_skb_load_bytes(skb, offset, head, 8);
    else if (packet->payload >= 4)
        bpf_skb_load_bytes(skb, offset, head, 4);
}

static __always_inline int hand_back(struct mr_flow *flow, int reason)
{
    count_hand_back(flow, reason);
    return TC_ACT_UNSPEC;
}

SEC("tc")
int mr_relay_ingress(struct __sk_buff *skb)
{
    struct mr_packet packet = {};
    if (parse(skb, &packet) < 0)
        return TC_ACT_UNSPEC;
    struct mr_flow flow;
    if (find_flow(&packet.key, &flow) < 0)
        return TC_ACT_UNSPEC;
    int reason = flow_refusal(&flow, &packet);
    if (reason >= 0)
        return hand_back(&flow, reason);
    if (skb->gso_size != 0 || skb->gso_segs > 1)
        return hand_back(&flow, MR_FP_BACK_GSO);

    __u8 head[8] = {};
    payload_head(skb, &packet, head);
    __u8 tos = traffic_class(&flow.entry, packet.tos);
    struct mr_sizes sizes;
    reason = payload_refusal(&flow.entry, &packet, head, &sizes);
    if (reason >= 0)
        return hand_back(&flow, reason);
    if (flow.entry.kind != MR_FP_KIND_PLAIN && checksum_pending(skb))
        return hand_back(&flow, MR_FP_BACK_CHECKSUM_STATE);

    struct mr_route route;
    reason = find_route(skb, packet.key.family, &flow.entry, BPF_FIB_LOOKUP_SKIP_NEIGH, &route);
    if (reason >= 0)
        return hand_back(&flow, reason);
    if (flow.entry.kind == MR_FP_KIND_CHANNEL_ADD) {
        __u32 mtu = 0;
        if (bpf_check_mtu(skb, route.ifindex, &mtu, MR_CHANNEL_HEADER, 0) != BPF_MTU_CHK_RET_SUCCESS)
            return hand_back(&flow, MR_FP_BACK_TOO_LARGE);
    }
    if (!take_credit(&flow, sizes.sent))
        return hand_back(&flow, MR_FP_BACK_CREDIT);

    int result;
    if (flow.entry.kind == MR_FP_KIND_CHANNEL_STRIP)
        result = strip_channel(skb, &packet, &flow.entry, tos, head);
    else if (flow.entry.kind == MR_FP_KIND_CHANNEL_ADD)
        result = add_channel(skb, &packet, &flow.entry, tos);
    else
        result = rewrite_plain(skb, &packet, &flow.entry, tos);
    // A helper failed; the datagram may be half rewritten, neither the old one nor the new.
    if (result < 0) {
        flow.count->failed += 1;
        flow.total->failed += 1;
        return TC_ACT_SHOT;
    }

    forwarded(&flow, &packet, tos, sizes.counted);
    if (route.local)
        return TC_ACT_OK;
    if (route.has_next_hop)
        return bpf_redirect_neigh(route.ifindex, &route.next_hop, sizeof(route.next_hop), 0);
    return bpf_redirect_neigh(route.ifindex, NULL, 0, 0);
}
