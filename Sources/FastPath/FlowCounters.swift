import CBPF

/// One entry's counters summed over every CPU, as the kernel kept them since the entry was
/// installed (or, for KernelFastPath's `totals`, every entry's since the program was loaded).
/// `packets` and `bytes` count what was forwarded; `bytes` is the application's payload, never
/// a ChannelData header (the one removed client to peer, nor the one added peer to client;
/// credit, by contrast, is charged the datagram as sent, added header included). ECN counts
/// are indexed by codepoint: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE.
public struct FlowCounters: Equatable, Sendable {
    /// Why a matching datagram went to user space unmodified (fastpath_abi.h's
    /// mr_fp_handback, in its order).
    public enum HandBack: Int, CaseIterable, Sendable {
        /// The entry's `expiresAt` has passed.
        case expired
        /// A STUN message (magic cookie): requests and indications are user space's.
        case stun
        /// A ChannelData header of another channel, or a length that does not add up.
        case malformed
        /// The kernel holds checksum state the rewrite would spoil: under tc, a change of
        /// length of a frame the NIC summed (CHECKSUM_COMPLETE), or of one whose checksum is
        /// left to finish (CHECKSUM_PARTIAL, from a local sender) when its payload is larger
        /// than the move carries (9,216 bytes) or the checksum does not start at its UDP
        /// header; under XDP, which cannot see that state, any datagram whose checksum field
        /// holds only the pseudo-header's sum.
        case checksumState
        /// Too large for the egress link once a ChannelData header is added.
        case tooLarge
        /// The first fragment of a fragmented IPv4 datagram.
        case fragment
        /// Several datagrams in one buffer (GSO or GRO).
        case gso
        /// The kernel has no way on for the rewritten datagram: no route, an unreachable,
        /// blackhole or prohibit route, a destination of this host no socket takes; under XDP
        /// also a next hop whose link-layer address is not known yet (user space's own send
        /// resolves it) or a route that leaves by another interface than the entry names.
        case noRoute
        /// The flow was quiet longer than the entry's `idleTimeout`; forwarding resumes only
        /// with a new install.
        case idle
        /// The entry is credited and its credit does not cover the datagram.
        case credit
        /// The frame was not addressed to this host's link address (another host's, a
        /// broadcast, a multicast): the stack drops or delivers it as it would anyway.
        case notHost
        /// The frame carried a VLAN tag on the interface the program is on.
        case vlan
        /// Reverse-path filtering on the arriving interface would drop it.
        case reversePath
        /// An IPv4 header checksum that does not add up, or an IP version not the ethertype's.
        case badHeader
        /// A UDP checksum that does not add up, or a zero one over IPv6.
        case badChecksum
        /// A payload larger than the relay's `--max-datagram-size`.
        case oversize
    }

    public var packets: UInt64 = 0
    public var bytes: UInt64 = 0
    public var ecnIn: [UInt64] = [0, 0, 0, 0]
    public var ecnOut: [UInt64] = [0, 0, 0, 0]
    public var handedBack: [HandBack: UInt64] = [:]
    /// Dropped because a kernel helper failed half-way through a rewrite.
    public var failed: UInt64 = 0

    public init() {}

    /// Both counts together: several entries folded into one figure.
    public static func + (left: FlowCounters, right: FlowCounters) -> FlowCounters {
        var sum = left
        sum.packets &+= right.packets
        sum.bytes &+= right.bytes
        sum.failed &+= right.failed
        for index in 0..<4 {
            sum.ecnIn[index] &+= right.ecnIn[index]
            sum.ecnOut[index] &+= right.ecnOut[index]
        }
        sum.handedBack.merge(right.handedBack, uniquingKeysWith: &+)
        return sum
    }

    mutating func add(_ cpu: mr_fp_counters) {
        packets &+= cpu.packets
        bytes &+= cpu.bytes
        failed &+= cpu.failed
        var copy = cpu
        withUnsafeBytes(of: &copy.ecn_in) { raw in
            for (index, value) in raw.bindMemory(to: UInt64.self).enumerated() { ecnIn[index] &+= value }
        }
        withUnsafeBytes(of: &copy.ecn_out) { raw in
            for (index, value) in raw.bindMemory(to: UInt64.self).enumerated() { ecnOut[index] &+= value }
        }
        withUnsafeBytes(of: &copy.handed_back) { raw in
            for (index, value) in raw.bindMemory(to: UInt64.self).enumerated() where value != 0 {
                if let reason = HandBack(rawValue: index) { handedBack[reason, default: 0] &+= value }
            }
        }
    }
}
