// The layout shared by the BPF program (Sources/FastPath/bpf/relay.bpf.c) and the FastPath
// module: the flow map's key and value, the per-CPU counters, and the per-slot state both sides
// write (the time of the last datagram forwarded, the credit). One definition, read by both
// compilers, so the two sides cannot disagree about an offset. Addresses and ports are in
// network byte order, as they stand in the packet; an IPv4 address fills the first 4 bytes of
// its 16 and the rest are zero.
#ifndef MEDIARELAY_FASTPATH_ABI_H
#define MEDIARELAY_FASTPATH_ABI_H

#include <linux/types.h>

/// What the program does to a matching datagram besides the address rewrite.
enum mr_fp_kind {
    /// Addresses and ports rewritten, payload untouched: session legs, forward-rule clients.
    MR_FP_KIND_PLAIN = 0,
    /// TURN client to peer: the 4-byte ChannelData header removed, the payload cut to the
    /// length it names (padding dropped). Only the entry's channel number matches.
    MR_FP_KIND_CHANNEL_STRIP = 1,
    /// TURN peer to client: a ChannelData header with the entry's channel and the payload's
    /// length put in front of the payload.
    MR_FP_KIND_CHANNEL_ADD = 2,
};

/// The DSCP sent on: the one that arrived, the entry's class value, or 0.
enum mr_fp_dscp {
    MR_FP_DSCP_MIRROR = 0,
    MR_FP_DSCP_CLASS = 1,
    MR_FP_DSCP_ZERO = 2,
};

/// The ECN codepoint sent on: the one that arrived (ECT(0), ECT(1), CE kept apart), or Not-ECT.
enum mr_fp_ecn {
    MR_FP_ECN_COPY = 0,
    MR_FP_ECN_CLEAR = 1,
};

/// Why a datagram that matched an entry was handed to user space unmodified.
enum mr_fp_handback {
    /// The entry's expiry has passed: user space decides (refresh or remove).
    MR_FP_BACK_EXPIRED = 0,
    /// A STUN message (magic cookie): requests and indications are user space's.
    MR_FP_BACK_STUN = 1,
    /// A length, channel number or header that does not add up.
    MR_FP_BACK_MALFORMED = 2,
    /// The datagram would change length while the kernel holds checksum state the rewrite
    /// cannot keep right: the NIC summed the frame (CHECKSUM_COMPLETE), or the sender left the
    /// UDP checksum to the kernel (CHECKSUM_PARTIAL) and the payload is larger than the tc
    /// program moves (MR_MOVE_MAX) or the checksum does not start at the UDP header. Under
    /// XDP: any datagram whose checksum field holds only the pseudo-header's sum.
    MR_FP_BACK_CHECKSUM_STATE = 3,
    /// The ChannelData header would take the datagram past the interface's MTU.
    MR_FP_BACK_TOO_LARGE = 4,
    /// The first fragment of a fragmented datagram.
    MR_FP_BACK_FRAGMENT = 5,
    /// A GSO or GRO packet (several datagrams in one buffer).
    MR_FP_BACK_GSO = 6,
    /// The entry leaves the route to the kernel and the kernel has none that sends the
    /// rewritten datagram on (unreachable, blackhole, prohibited, forwarding off, a tunnel).
    MR_FP_BACK_NO_ROUTE = 7,
    /// The flow has been quiet longer than the entry's idle timeout: user space decides,
    /// and the kernel forwards again only after a new install.
    MR_FP_BACK_IDLE = 8,
    /// The entry is credited and its credit (bytes, packets or both, as its flags say) does
    /// not cover the datagram as it would be sent.
    MR_FP_BACK_CREDIT = 9,
    /// The frame is not addressed to this host's link address: another host's (a promiscuous
    /// NIC, a switch flooding unknown unicast), a broadcast or a multicast. The stack drops the
    /// first and may deliver the others; either way it decides, not the program.
    MR_FP_BACK_NOT_HOST = 10,
    /// The frame carries an 802.1Q or 802.1ad tag on the interface the program is on: its VLAN
    /// device (or none) decides, and what the relay sends goes out untagged.
    MR_FP_BACK_VLAN = 11,
    /// Reverse-path filtering (net.ipv4.conf.*.rp_filter) on the arriving interface would drop
    /// the datagram: strict, the route back to its source leaves by another interface; loose,
    /// there is no route back at all.
    MR_FP_BACK_REVERSE_PATH = 12,
    /// An IP header the stack rejects: an IPv4 header checksum that does not add up, or a
    /// version that is not the ethertype's.
    MR_FP_BACK_BAD_HEADER = 13,
    /// A UDP checksum that does not add up, or a zero one over IPv6.
    MR_FP_BACK_BAD_CHECKSUM = 14,
    /// A payload larger than the relay takes (--max-datagram-size): user space drops it.
    MR_FP_BACK_OVERSIZE = 15,
    MR_FP_BACK_COUNT = 16,
};

/// Where a rewritten datagram goes.
enum mr_fp_egress {
    /// The kernel's routing table decides, looked up for the rewritten addresses: out of the
    /// interface of the route, or up this host's stack when the destination is local.
    MR_FP_EGRESS_ROUTE = 0,
    /// Out of `egress_ifindex`; 0: up this host's stack (TC_ACT_OK / XDP_PASS).
    MR_FP_EGRESS_INTERFACE = 1,
};

/// The entry's byte credit (mr_fp_slot.credit) limits what it forwards.
#define MR_FP_FLAG_CREDITED 0x01
/// The entry's packet credit (mr_fp_slot.packet_credit) limits what it forwards; with
/// MR_FP_FLAG_CREDITED as well, a datagram goes through only when both cover it.
#define MR_FP_FLAG_PACKET_CREDITED 0x02
/// IPv4: the datagram leaves with DF set (clear without the flag), as the relay's socket for
/// that flow sends it (TURN with DONT-FRAGMENT, sessions, forward rules; not TURN without it).
#define MR_FP_FLAG_DONT_FRAGMENT 0x04

/// No shared end (mr_fp_entry.shared_ends).
#define MR_FP_NO_SLOT 0xFFFFFFFFu

/// net.ipv4.conf.*.rp_filter's values.
enum mr_fp_reverse_path {
    MR_FP_REVERSE_PATH_OFF = 0,
    MR_FP_REVERSE_PATH_STRICT = 1,
    MR_FP_REVERSE_PATH_LOOSE = 2,
};

/// What the host's settings make of a datagram, read by user space when a program is attached:
/// one value in the `config` map (key 0).
struct mr_fp_config {
    __u32 max_payload;      // the largest UDP payload the relay takes; larger is handed back
    __u8 ttl;               // net.ipv4.ip_default_ttl: the TTL the relay's sockets send with
    __u8 hop_limit;         // net.ipv6.conf.default.hop_limit: for interfaces not in `interfaces`
    __u8 reverse_path;      // whether any interface filters by reverse path (rp_filter 1 or 2)
    __u8 reserved;
};

/// One interface of the namespace, in the `interfaces` map by index: what the stack checks a
/// frame arriving there by, and the hop limit of IPv6 datagrams leaving by it.
struct mr_fp_interface {
    __u8 mac[6];            // the interface's own link address
    __u8 reverse_path;      // enum mr_fp_reverse_path: max(conf/all, conf/NAME) rp_filter
    __u8 hop_limit;         // net.ipv6.conf.NAME.hop_limit
};

/// The exact 5-tuple of an arriving datagram (protocol UDP implied), and for ChannelData the
/// channel number its header names: one TURN client's 5-tuple carries all its channels, each
/// to its own peer. 0 for every other datagram. The program looks a datagram whose first byte
/// could begin ChannelData (0x40-0x7F) up with its channel first, then with 0.
struct mr_fp_key {
    __u8 family;            // 4 or 6
    __u8 reserved;
    __be16 channel;         // 0x4000-0x7FFF, or 0
    __be16 source_port;
    __be16 destination_port;
    __u8 source[16];
    __u8 destination[16];
};

/// What to do with a datagram whose 5-tuple matches.
struct mr_fp_entry {
    __u8 source[16];        // new source address (same family as the key)
    __u8 destination[16];   // new destination address
    __be16 source_port;
    __be16 destination_port;
    __u8 kind;              // enum mr_fp_kind
    __u8 dscp_mode;         // enum mr_fp_dscp
    __u8 dscp_value;        // DSCP for MR_FP_DSCP_CLASS (0-63)
    __u8 ecn_mode;          // enum mr_fp_ecn
    __u16 channel;          // ChannelData channel number (host order), for the channel kinds
    __u8 egress_mode;       // enum mr_fp_egress
    __u8 flags;             // MR_FP_FLAG_*
    __u32 egress_ifindex;   // for MR_FP_EGRESS_INTERFACE; 0: deliver in this host
    __u32 counter_slot;     // index into the counters and slots maps
    __u32 flow_label;       // IPv6 flow label sent (low 20 bits, host order); 0: none
    __u64 idle_ns;          // longest quiet time before the flow is handed back; 0: none
    // Slots whose end the entry shares with others (a TURN channel: its permission's and its
    // allocation's), MR_FP_NO_SLOT where none: the entry hands back once any of them, or its
    // own slot's, has passed. Moving a shared end is one store however many entries share it.
    __u32 shared_ends[2];
};

/// One slot's state, in a map user space maps into its memory (BPF_F_MMAPABLE), so that
/// reading the time and exchanging the credits cost no system call. Both sides write it, so
/// each access is a single aligned 64-bit load, store or atomic.
struct mr_fp_slot {
    __u64 last_forwarded_ns;  // CLOCK_MONOTONIC of the last datagram forwarded, or of install
    __s64 credit;             // bytes a credited entry may still send on
    __s64 packet_credit;      // datagrams a packet-credited entry may still send on
    __u64 expires_ns;         // CLOCK_MONOTONIC after which the entry hands back; 0: never.
                              // Here, not in the entry, so that a request that moves a flow's
                              // end (a refreshed permission) costs a store, not a map update.
};

/// One entry's counters on one CPU. `bytes` counts the application's payload forwarded,
/// without any ChannelData header.
struct mr_fp_counters {
    __u64 packets;
    __u64 bytes;
    __u64 ecn_in[4];        // by codepoint: Not-ECT, ECT(1), ECT(0), CE
    __u64 ecn_out[4];
    __u64 handed_back[MR_FP_BACK_COUNT];
    __u64 failed;           // dropped: a helper failed after the datagram was changed
};

#endif
