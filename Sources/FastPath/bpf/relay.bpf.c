// mediarelay's kernel fast path: a tc program (tcx ingress) and an XDP program that forward
// the datagrams of flows user space has already decided, and pass everything else on
// untouched to the relay's sockets. "Untouched" in tc returns TC_ACT_UNSPEC, tcx's "next": a
// program attached after this one (another relay's) still sees the datagram, and with none it
// goes up the stack; in XDP it is XDP_PASS. Both share one set of maps (one object), so an
// entry forwards the same whichever program an interface runs. The layout of the maps is
// fastpath_abi.h, shared with FastPath.
//
// Rules it keeps:
// - Anything it is not sure of goes to user space unmodified: non-UDP, IP options, fragments,
//   IPv6 extension headers, GSO/GRO packets, unknown 5-tuples, STUN messages, expired or idle
//   entries, credit that does not cover the datagram, no route for it, lengths that do not add
//   up. Handing back is always safe: user space does what it does today. What decides (the
//   entry, its checks, route, credit and counts) is flow.h, shared with the XDP program.
// - Every checksum is updated from differences (RFC 1624), never recomputed over the payload.
//   When a datagram changes length and the sender left the checksum to the kernel
//   (CHECKSUM_PARTIAL), the tc program keeps the headers where the kernel will finish it and
//   moves the payload instead (skb_rewrite.h); when the NIC summed the frame
//   (CHECKSUM_COMPLETE), it is handed back. XDP cannot see that state: it hands back every
//   datagram whose checksum field holds only the pseudo-header's sum, the mark of one whose
//   checksum was left to finish.
// - Packet pointers are read once at the start; after a helper that may move the packet only
//   offsets are used.
// - The two programs differ only in how bytes move (skb_rewrite.h, xdp_rewrite.h) and how a
//   datagram leaves: tc by bpf_redirect_neigh (the kernel fills the Ethernet header), XDP by
//   bpf_redirect with the addresses the route lookup found (an unresolved neighbour is handed
//   back, and user space's own send resolves it).
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
#include "packet.h"
#include "rewrite.h"
#include "verify.h"
#include "flow.h"
#include "skb_rewrite.h"
#include "xdp_rewrite.h"

char LICENSE[] SEC("license") = "GPL";

// <linux/if_packet.h>'s PACKET_HOST: a frame addressed to this host's link address.
#define MR_PACKET_HOST 0

/// What both programs decide before touching the packet: -1 to go on, else the hand-back
/// reason (counted here). How the frame came in is as arrival_refusal says; `head` holds the
/// first payload bytes.
static __always_inline int common_refusal(void *context, struct mr_flow *flow, const struct mr_packet *packet,
                                          __u32 ifindex, int for_host, int tagged, const __u8 head[8],
                                          struct mr_sizes *sizes)
{
    int reason = arrival_refusal(context, packet, ifindex, for_host, tagged);
    if (reason < 0)
        reason = flow_refusal(flow, packet);
    if (reason < 0)
        reason = payload_refusal(&flow->entry, packet, head, sizes);
    if (reason >= 0)
        count_hand_back(flow, reason);
    return reason;
}

/// The last checks, once the way out is known (`reason` is what finding it said): room on the
/// egress link for the datagram as it leaves (a ChannelData header added or removed), then
/// the credits, taken only when everything else allows the datagram through. -1 to go on,
/// else the hand-back reason (counted here): a datagram too large for the link goes to user
/// space, whose socket fragments it or refuses it as the flow's DF setting says.
static __always_inline int departure_refusal(void *context, struct mr_flow *flow, int reason, const struct mr_packet *packet,
                                             const struct mr_route *route, const struct mr_sizes *sizes)
{
    __u32 mtu = 0;
    __s32 growth = (__s32)sizes->sent - (__s32)packet->payload;
    if (reason < 0 && !route->local
        && bpf_check_mtu(context, route->ifindex, &mtu, growth, 0) != BPF_MTU_CHK_RET_SUCCESS)
        reason = MR_FP_BACK_TOO_LARGE;
    if (reason < 0 && !take_credit(flow, sizes->sent))
        reason = MR_FP_BACK_CREDIT;
    if (reason >= 0)
        count_hand_back(flow, reason);
    return reason;
}

/// A helper failed; the datagram may be half rewritten, neither the old one nor the new, and
/// is dropped.
static __always_inline void count_failure(struct mr_flow *flow)
{
    flow->count->failed += 1;
    flow->total->failed += 1;
}

SEC("tc")
int mr_relay_ingress(struct __sk_buff *skb)
{
    struct mr_packet packet = {};
    if (parse_frame((void *)(long)skb->data, (void *)(long)skb->data_end, skb->len, &packet) < 0)
        return TC_ACT_UNSPEC;
    __u8 head[8] = {};
    skb_payload_head(skb, &packet, head);
    struct mr_flow flow;
    if (find_flow(&packet, head, &flow) < 0)
        return TC_ACT_UNSPEC;
    if (skb->gso_size != 0 || skb->gso_segs > 1) {
        count_hand_back(&flow, MR_FP_BACK_GSO);
        return TC_ACT_UNSPEC;
    }
    // The kernel has already taken any VLAN tag off into the socket buffer, and set the
    // packet type from the destination link address.
    struct mr_sizes sizes;
    if (common_refusal(skb, &flow, &packet, skb->ingress_ifindex, skb->pkt_type == MR_PACKET_HOST, skb->vlan_present != 0,
                       head, &sizes) >= 0)
        return TC_ACT_UNSPEC;
    int checksum = skb_checksum_refusal(skb, &packet);
    if (checksum >= 0) {
        count_hand_back(&flow, checksum);
        return TC_ACT_UNSPEC;
    }
    int method = MR_RESIZE_ROOM;
    if (flow.entry.kind != MR_FP_KIND_PLAIN) {
        // What moves with the headers kept in place: the payload, as it arrived (added header)
        // or as it leaves (removed header).
        __u32 moved = flow.entry.kind == MR_FP_KIND_CHANNEL_ADD ? packet.payload : sizes.counted;
        int refusal = skb_resize_refusal(skb, &packet, &flow.entry, moved, &method);
        if (refusal >= 0) {
            count_hand_back(&flow, refusal);
            return TC_ACT_UNSPEC;
        }
    }
    struct mr_route route;
    int reason = find_route(skb, packet.key.family, &flow.entry, BPF_FIB_LOOKUP_SKIP_NEIGH, 0, &route);
    if (departure_refusal(skb, &flow, reason, &packet, &route, &sizes) >= 0)
        return TC_ACT_UNSPEC;

    struct mr_out out = { traffic_class(&flow.entry, packet.tos), hop_limit(packet.key.family, &route) };
    int result;
    if (flow.entry.kind == MR_FP_KIND_CHANNEL_STRIP && method == MR_RESIZE_MOVE)
        result = skb_strip_channel_moving(skb, &packet, &flow.entry, &out, head);
    else if (flow.entry.kind == MR_FP_KIND_CHANNEL_STRIP)
        result = skb_strip_channel(skb, &packet, &flow.entry, &out, head);
    else if (flow.entry.kind == MR_FP_KIND_CHANNEL_ADD && method == MR_RESIZE_MOVE)
        result = skb_add_channel_moving(skb, &packet, &flow.entry, &out);
    else if (flow.entry.kind == MR_FP_KIND_CHANNEL_ADD)
        result = skb_add_channel(skb, &packet, &flow.entry, &out);
    else
        result = skb_rewrite_plain(skb, &packet, &flow.entry, &out);
    if (result < 0) {
        count_failure(&flow);
        return TC_ACT_SHOT;
    }

    forwarded(&flow, &packet, out.tos, sizes.counted);
    if (route.local)
        return TC_ACT_OK;
    if (route.has_next_hop)
        return bpf_redirect_neigh(route.ifindex, &route.next_hop, sizeof(route.next_hop), 0);
    return bpf_redirect_neigh(route.ifindex, NULL, 0, 0);
}

SEC("xdp")
int mr_relay_xdp(struct xdp_md *context)
{
    void *data = (void *)(long)context->data;
    void *end = (void *)(long)context->data_end;
    struct mr_packet packet = {};
    if (parse_frame(data, end, end - data, &packet) < 0)
        return XDP_PASS;
    __u8 head[8] = {};
    xdp_payload_head(context, &packet, head);
    struct mr_flow flow;
    if (find_flow(&packet, head, &flow) < 0)
        return XDP_PASS;
    __u32 ifindex = context->ingress_ifindex;
    struct mr_sizes sizes;
    if (common_refusal(context, &flow, &packet, ifindex, xdp_for_host(context, ifindex), 0, head, &sizes) >= 0)
        return XDP_PASS;
    if (checksum_left_to_finish(&packet)) {
        count_hand_back(&flow, MR_FP_BACK_CHECKSUM_STATE);
        return XDP_PASS;
    }
    // XDP sees no checksum state: every payload is summed.
    int checksum = udp_checksum_refusal(context, &packet, 1);
    if (checksum >= 0) {
        count_hand_back(&flow, checksum);
        return XDP_PASS;
    }

    // bpf_redirect needs the next hop's Ethernet address, which only the route lookup gives:
    // an entry's own interface is looked up too, and must be where the route leads.
    int named = flow.entry.egress_mode == MR_FP_EGRESS_INTERFACE && flow.entry.egress_ifindex != 0;
    struct mr_route route;
    int reason = find_route(context, packet.key.family, &flow.entry, 0, named, &route);
    if (reason < 0 && named && (route.local || route.ifindex != flow.entry.egress_ifindex))
        reason = MR_FP_BACK_NO_ROUTE;
    if (departure_refusal(context, &flow, reason, &packet, &route, &sizes) >= 0)
        return XDP_PASS;

    struct mr_out out = { traffic_class(&flow.entry, packet.tos), hop_limit(packet.key.family, &route) };
    if (xdp_rewrite(context, &packet, &flow.entry, &out, head, &route) < 0) {
        count_failure(&flow);
        return XDP_DROP;
    }
    forwarded(&flow, &packet, out.tos, sizes.counted);
    if (route.local)
        return XDP_PASS;
    return bpf_redirect(route.ifindex, 0);
}
