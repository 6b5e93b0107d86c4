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
    MR_FP_BACK_COUNT = 10,
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
    __u32 reserved;
    __u64 expires_ns;       // CLOCK_MONOTONIC; 0: no expiry
    __u64 idle_ns;          // longest quiet time before the flow is handed back; 0: none
};

/// One slot's state, in a map user space maps into its memory (BPF_F_MMAPABLE), so that
/// reading the time and exchanging the credits cost no system call. Both sides write it, so
/// each access is a single aligned 64-bit load, store or atomic.
struct mr_fp_slot {
    __u64 last_forwarded_ns;  // CLOCK_MONOTONIC of the last datagram forwarded, or of install
    __s64 credit;             // bytes a credited entry may still send on
    __s64 packet_credit;      // datagrams a packet-credited entry may still send on
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
