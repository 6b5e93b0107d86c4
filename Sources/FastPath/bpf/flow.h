// What the tc and XDP programs decide alike, whatever the packet's container: the maps, the
// entry found for a datagram, the checks that hand it back to user space, the route, the
// credit taken, and the counting. Included by relay.bpf.c after rewrite.h.
#ifndef MEDIARELAY_FLOW_H
#define MEDIARELAY_FLOW_H

// Sizes are set by the loader before the maps are created. The flows map allocates on update
// (no preallocation) so that a replaced entry is freed only after every reader is done with
// it: a preallocated element could be reused while the program copies it.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, 1);
    __type(key, struct mr_fp_key);
    __type(value, struct mr_fp_entry);
} flows SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct mr_fp_counters);
} counters SEC(".maps");

// Every datagram that matched an entry since the program was loaded, removed entries included.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct mr_fp_counters);
} totals SEC(".maps");

// Mapped into user space's memory: the last time forwarded and the two credits, per slot.
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct mr_fp_slot);
} slots SEC(".maps");

// What the host's settings make of a datagram (fastpath_abi.h), written by user space when a
// program is attached.
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct mr_fp_config);
} config SEC(".maps");

// Every interface of the namespace when a program was attached, by index.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 256);
    __type(key, __u32);
    __type(value, struct mr_fp_interface);
} interfaces SEC(".maps");

// Room for a route lookup's parameters, per CPU: kept off the program's stack, which the
// program and the function it calls (buffer_sum) share, 512 bytes in all.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct bpf_fib_lookup);
} route_lookup SEC(".maps");

/// This CPU's route lookup parameters, cleared.
static __always_inline struct bpf_fib_lookup *route_parameters(void)
{
    __u32 zero = 0;
    struct bpf_fib_lookup *fib = bpf_map_lookup_elem(&route_lookup, &zero);
    if (fib)
        __builtin_memset(fib, 0, sizeof(*fib));
    return fib;
}

#define MR_STUN_COOKIE 0x2112A442
// <sys/socket.h>'s families; the BPF build has no libc headers.
#define MR_AF_INET 2
#define MR_AF_INET6 10
#define MR_LOOPBACK_IFINDEX 1

/// A datagram's entry and where its counts and state go.
struct mr_flow {
    struct mr_fp_entry entry;
    struct mr_fp_counters *count;
    struct mr_fp_counters *total;
    struct mr_fp_slot *state;
    __u64 now;
};

/// The host's settings as user space wrote them; NULL only before the first attach.
static __always_inline const struct mr_fp_config *host_config(void)
{
    __u32 zero = 0;
    return bpf_map_lookup_elem(&config, &zero);
}

/// Payload sizes of a datagram about to be forwarded: `sent` is what leaves (a ChannelData
/// header included when one is added), charged to the credit; `counted` is the payload
/// counted in `bytes` (the application's data: without any ChannelData header).
struct mr_sizes {
    __u32 sent;
    __u32 counted;
};

/// Where the rewritten datagram goes: up this host's stack, or out of `ifindex` towards
/// `next_hop` (when the route named it) with the MACs the route found.
struct mr_route {
    __u32 ifindex;
    __u8 local;
    __u8 has_next_hop;
    struct bpf_redir_neigh next_hop;
    __u8 source_mac[6];
    __u8 destination_mac[6];
};

/// The entry for the datagram: for what may be ChannelData (4 bytes or more, the first byte
/// 0x40-0x7F), the entry of its 5-tuple and channel first; then that of its 5-tuple alone.
/// `packet->key` is left as the key found.
static __always_inline int find_flow(struct mr_packet *packet, const __u8 head[8], struct mr_flow *flow)
{
    struct mr_fp_entry *found = NULL;
    if (packet->payload >= MR_CHANNEL_HEADER && head[0] >= 0x40 && head[0] <= 0x7f) {
        __u16 channel = ((__u16)head[0] << 8) | head[1];
        packet->key.channel = bpf_htons(channel);
        found = bpf_map_lookup_elem(&flows, &packet->key);
    }
    if (!found) {
        packet->key.channel = 0;
        found = bpf_map_lookup_elem(&flows, &packet->key);
    }
    if (!found)
        return -1;
    // A copy, so that an update by user space in the middle cannot mix two entries.
    flow->entry = *found;
    __u32 slot = flow->entry.counter_slot;
    __u32 zero = 0;
    flow->count = bpf_map_lookup_elem(&counters, &slot);
    flow->total = bpf_map_lookup_elem(&totals, &zero);
    flow->state = bpf_map_lookup_elem(&slots, &slot);
    if (!flow->count || !flow->total || !flow->state)
        return -1;
    flow->now = bpf_ktime_get_ns();
    return 0;
}

static __always_inline void count_hand_back(struct mr_flow *flow, int reason)
{
    if (reason < 0 || reason >= MR_FP_BACK_COUNT)
        return;
    flow->count->handed_back[reason] += 1;
    flow->total->handed_back[reason] += 1;
}

/// Whether reverse-path filtering on the arriving interface lets an IPv4 datagram from its
/// source in, as the stack checks it (fib_validate_source): the route back to the source,
/// looked up from `lo` as the kernel does, must leave by the arriving interface (strict) or
/// exist at all (loose). IPv6 has no such setting.
static __always_inline int reverse_path_ok(void *context, const struct mr_packet *packet, __u32 ifindex,
                                           const struct mr_fp_config *settings)
{
    // Most hosts filter nowhere: then not even the interface is looked up.
    if (packet->key.family != 4 || !settings->reverse_path)
        return 1;
    struct mr_fp_interface *interface = bpf_map_lookup_elem(&interfaces, &ifindex);
    __u8 mode = interface ? interface->reverse_path : MR_FP_REVERSE_PATH_OFF;
    if (mode == MR_FP_REVERSE_PATH_OFF)
        return 1;
    struct bpf_fib_lookup *fib = route_parameters();
    if (!fib)
        return 0;
    fib->family = MR_AF_INET;
    fib->l4_protocol = IPPROTO_UDP;
    fib->sport = packet->key.destination_port;
    fib->dport = packet->key.source_port;
    fib->ifindex = MR_LOOPBACK_IFINDEX;
    __builtin_memcpy(&fib->ipv4_src, packet->key.destination, 4);
    __builtin_memcpy(&fib->ipv4_dst, packet->key.source, 4);
    long result = bpf_fib_lookup(context, fib, sizeof(*fib), BPF_FIB_LOOKUP_SKIP_NEIGH);
    if (result != BPF_FIB_LKUP_RET_SUCCESS)
        return 0;
    return mode == MR_FP_REVERSE_PATH_LOOSE || fib->ifindex == ifindex;
}

/// What the host's stack would refuse before any socket saw the datagram, so that the stack
/// decides it as it would without the program: a frame for another link address, a VLAN tag,
/// an IP header it rejects, a payload larger than the relay takes, a source reverse-path
/// filtering drops. -1: none. (The UDP checksum, the dearest check, comes last, apart.) How
/// the frame came in is each program's to learn: the interface (`ifindex`), whether it was
/// addressed to this host's link address (`for_host`), whether a VLAN tag came with it that
/// the packet no longer shows (`tagged`: tc, where the kernel has taken it off).
static __always_inline int arrival_refusal(void *context, const struct mr_packet *packet,
                                           __u32 ifindex, int for_host, int tagged)
{
    if (!for_host)
        return MR_FP_BACK_NOT_HOST;
    if (tagged || packet->tagged)
        return MR_FP_BACK_VLAN;
    if (!packet->header_ok)
        return MR_FP_BACK_BAD_HEADER;
    const struct mr_fp_config *settings = host_config();
    if (!settings || packet->payload > settings->max_payload)
        return MR_FP_BACK_OVERSIZE;
    if (!reverse_path_ok(context, packet, ifindex, settings))
        return MR_FP_BACK_REVERSE_PATH;
    return -1;
}

/// The entry's own reasons to hand a datagram back, before its payload is read: its end or a
/// shared one passed, its flow idle too long, or the datagram a first fragment. -1: none.
static __always_inline int flow_refusal(const struct mr_flow *flow, const struct mr_packet *packet)
{
    const struct mr_fp_entry *entry = &flow->entry;
    __u64 expires = *(volatile __u64 *)&flow->state->expires_ns;
    if (expires != 0 && flow->now >= expires)
        return MR_FP_BACK_EXPIRED;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        __u32 shared = entry->shared_ends[i];
        if (shared == MR_FP_NO_SLOT)
            continue;
        struct mr_fp_slot *end = bpf_map_lookup_elem(&slots, &shared);
        __u64 ends = end ? *(volatile __u64 *)&end->expires_ns : 1;
        if (ends != 0 && flow->now >= ends)
            return MR_FP_BACK_EXPIRED;
    }
    if (entry->idle_ns != 0) {
        __u64 last = *(volatile __u64 *)&flow->state->last_forwarded_ns;
        // User space writes the time of an install a moment after reading its clock: a last
        // time ahead of `now` is a fresh install, not an idle flow.
        if (flow->now > last && flow->now - last > entry->idle_ns)
            return MR_FP_BACK_IDLE;
    }
    if (packet->more_fragments)
        return MR_FP_BACK_FRAGMENT;
    return -1;
}

static __always_inline int is_stun(const struct mr_packet *packet, const __u8 head[8])
{
    __u32 cookie;
    __builtin_memcpy(&cookie, head + 4, 4);
    return packet->payload >= 20 && (head[0] & 0xc0) == 0 && cookie == bpf_htonl(MR_STUN_COOKIE);
}

/// The payload's reasons to hand a datagram back (a STUN message; a ChannelData header that
/// does not match or add up), -1 when there are none, and then the sizes it goes on with.
static __always_inline int payload_refusal(const struct mr_fp_entry *entry, const struct mr_packet *packet,
                                           const __u8 head[8], struct mr_sizes *sizes)
{
    if (is_stun(packet, head))
        return MR_FP_BACK_STUN;
    sizes->sent = packet->payload;
    sizes->counted = packet->payload;
    if (entry->kind == MR_FP_KIND_CHANNEL_STRIP) {
        if (packet->payload < MR_CHANNEL_HEADER)
            return MR_FP_BACK_MALFORMED;
        __u16 channel = ((__u16)head[0] << 8) | head[1];
        __u16 length = ((__u16)head[2] << 8) | head[3];
        if (channel != entry->channel || length > packet->payload - MR_CHANNEL_HEADER
            || packet->payload - MR_CHANNEL_HEADER - length > 3)
            return MR_FP_BACK_MALFORMED;
        sizes->sent = length;
        sizes->counted = length;
    } else if (entry->kind == MR_FP_KIND_CHANNEL_ADD) {
        sizes->sent = packet->payload + MR_CHANNEL_HEADER;
    }
    return -1;
}

/// Whether a socket of this host would take a datagram from the entry's rewritten source to
/// its rewritten destination: the route lookup says "not forwarded" both for a local
/// destination and for none at all, and only the first can be delivered up the stack.
static __always_inline int delivers_here(void *context, __u8 family, const struct mr_fp_entry *entry)
{
    struct bpf_sock_tuple tuple = {};
    __u32 size;
    if (family == 4) {
        __builtin_memcpy(&tuple.ipv4.saddr, entry->source, 4);
        __builtin_memcpy(&tuple.ipv4.daddr, entry->destination, 4);
        tuple.ipv4.sport = entry->source_port;
        tuple.ipv4.dport = entry->destination_port;
        size = sizeof(tuple.ipv4);
    } else {
        __builtin_memcpy(tuple.ipv6.saddr, entry->source, 16);
        __builtin_memcpy(tuple.ipv6.daddr, entry->destination, 16);
        tuple.ipv6.sport = entry->source_port;
        tuple.ipv6.dport = entry->destination_port;
        size = sizeof(tuple.ipv6);
    }
    struct bpf_sock *socket = bpf_sk_lookup_udp(context, &tuple, size, BPF_F_CURRENT_NETNS, 0);
    if (!socket)
        return 0;
    bpf_sk_release(socket);
    return 1;
}

/// Where the entry sends its datagrams. With an explicit interface, that interface (0: this
/// host). Otherwise the kernel's routes for the rewritten addresses, looked up the way the
/// kernel routes a datagram this host sends: from `lo`, no output device given
/// (BPF_FIB_LOOKUP_OUTPUT would make the device given the one the route must leave by, and
/// only `lo` is in every namespace). The kernel answers only where forwarding is on for that
/// device, so KernelFastPath turns it on for `lo` (which forwards nothing by it). A
/// forwardable route sends the datagram out of its interface towards its next hop; a
/// destination a local socket takes goes up the stack; anything else is handed back.
/// `flags` adds BPF_FIB_LOOKUP_SKIP_NEIGH where the caller resolves the neighbour itself;
/// `look_up` asks for the lookup even for an entry that names its interface (XDP needs the
/// next hop's link address). -1 when the way is found, else the hand-back reason.
static __always_inline int find_route(void *context, __u8 family, const struct mr_fp_entry *entry,
                                      __u32 flags, int look_up, struct mr_route *route)
{
    __builtin_memset(route, 0, sizeof(*route));
    if (entry->egress_mode == MR_FP_EGRESS_INTERFACE && !look_up) {
        route->ifindex = entry->egress_ifindex;
        route->local = entry->egress_ifindex == 0;
        return -1;
    }
    struct bpf_fib_lookup *fib = route_parameters();
    if (!fib)
        return MR_FP_BACK_NO_ROUTE;
    fib->l4_protocol = IPPROTO_UDP;
    fib->sport = entry->source_port;
    fib->dport = entry->destination_port;
    fib->ifindex = MR_LOOPBACK_IFINDEX;
    if (family == 4) {
        fib->family = MR_AF_INET;
        __builtin_memcpy(&fib->ipv4_src, entry->source, 4);
        __builtin_memcpy(&fib->ipv4_dst, entry->destination, 4);
    } else {
        fib->family = MR_AF_INET6;
        __builtin_memcpy(fib->ipv6_src, entry->source, 16);
        __builtin_memcpy(fib->ipv6_dst, entry->destination, 16);
    }
    long result = bpf_fib_lookup(context, fib, sizeof(*fib), flags);
    if (result == BPF_FIB_LKUP_RET_NOT_FWDED && delivers_here(context, family, entry)) {
        route->local = 1;
        return -1;
    }
    if (result == BPF_FIB_LKUP_RET_FRAG_NEEDED)
        return MR_FP_BACK_TOO_LARGE;
    if (result != BPF_FIB_LKUP_RET_SUCCESS)
        return MR_FP_BACK_NO_ROUTE;
    route->ifindex = fib->ifindex;
    route->has_next_hop = 1;
    // The lookup leaves the gateway (or the destination itself) in the destination field.
    route->next_hop.nh_family = fib->family;
    if (fib->family == MR_AF_INET)
        route->next_hop.ipv4_nh = fib->ipv4_dst;
    else
        __builtin_memcpy(route->next_hop.ipv6_nh, fib->ipv6_dst, 16);
    __builtin_memcpy(route->source_mac, fib->smac, 6);
    __builtin_memcpy(route->destination_mac, fib->dmac, 6);
    return -1;
}

/// Takes `amount` off `credit` when it covers it; false (nothing taken) when it does not. Two
/// CPUs may both pass the check before either takes: a credit can go below zero by at most a
/// datagram per CPU, which user space sees in what it exchanges and charges to the next grant.
static __always_inline int take_from(__s64 *credit, __s64 amount)
{
    if (*(volatile __s64 *)credit < amount)
        return 0;
    __sync_fetch_and_add(credit, -amount);
    return 1;
}

/// Takes what a datagram costs a credited entry, as its flags say: its size off the byte
/// credit, one off the packet credit. False, with nothing taken, when either does not cover
/// it: the bytes are taken first and given back when the packets then fall short. Should user
/// space exchange the byte credit in between, the old grant it reads back lacks those bytes
/// and the new one receives them: the two together neither lose nor make up any.
static __always_inline int take_credit(struct mr_flow *flow, __u32 bytes)
{
    int by_bytes = flow->entry.flags & MR_FP_FLAG_CREDITED;
    if (by_bytes && !take_from(&flow->state->credit, bytes))
        return 0;
    if ((flow->entry.flags & MR_FP_FLAG_PACKET_CREDITED) && !take_from(&flow->state->packet_credit, 1)) {
        if (by_bytes)
            __sync_fetch_and_add(&flow->state->credit, (__s64)bytes);
        return 0;
    }
    return 1;
}

/// The TTL (IPv4) or hop limit (IPv6) the relay's own socket would send the datagram with:
/// the host's default TTL, or the egress interface's hop limit.
static __always_inline __u8 hop_limit(__u8 family, const struct mr_route *route)
{
    const struct mr_fp_config *settings = host_config();
    __u8 limit = settings ? (family == 4 ? settings->ttl : settings->hop_limit) : 64;
    if (family == 4)
        return limit;
    __u32 ifindex = route->local ? MR_LOOPBACK_IFINDEX : route->ifindex;
    struct mr_fp_interface *interface = bpf_map_lookup_elem(&interfaces, &ifindex);
    return interface && interface->hop_limit != 0 ? interface->hop_limit : limit;
}

static __always_inline void add_forwarded(struct mr_fp_counters *count, __u8 tos_in, __u8 tos_out, __u32 bytes)
{
    count->packets += 1;
    count->bytes += bytes;
    count->ecn_in[tos_in & 3] += 1;
    count->ecn_out[tos_out & 3] += 1;
}

/// Counts a datagram sent on and notes the time: the flow is not idle.
static __always_inline void forwarded(struct mr_flow *flow, const struct mr_packet *packet, __u8 tos, __u32 bytes)
{
    add_forwarded(flow->count, packet->tos, tos, bytes);
    add_forwarded(flow->total, packet->tos, tos, bytes);
    *(volatile __u64 *)&flow->state->last_forwarded_ns = flow->now;
}

#endif
