import CBPF

/// One entry's counters summed over every CPU, as the kernel kept them since the entry was
/// installed. `bytes` counts UDP payload bytes sent on (after a ChannelData header was removed
/// or added). ECN counts are indexed by codepoint: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE.
public struct FlowCounters: Equatable, Sendable {
    /// Why a matching datagram went to user space unmodified.
    public enum HandBack: Int, CaseIterable, Sendable {
        case expired, stun, malformed, checksumState, tooLarge, fragment, gso
    }

    public var packets: UInt64 = 0
    public var bytes: UInt64 = 0
    public var ecnIn: [UInt64] = [0, 0, 0, 0]
    public var ecnOut: [UInt64] = [0, 0, 0, 0]
    public var handedBack: [HandBack: UInt64] = [:]
    /// Dropped because a kernel helper failed half-way through a rewrite.
    public var failed: UInt64 = 0

    public init() {}

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
