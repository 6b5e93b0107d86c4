import NetAddress

/// A session leg's two limits, max_packets_per_second then max_bytes_per_second: two
/// `Policer`s in series, as two policers on one path behave (a datagram the byte limit drops has
/// still taken its token from the packet limit). One value, so the leg's state is reached once
/// per datagram.
struct LegLimits {
    var packets: Policer
    var bytes: Policer

    init(packetsPerSecond: Int, bytesPerSecond: Int, now: UInt64) {
        packets = Policer(rate: UInt64(packetsPerSecond), now: now)
        bytes = Policer(rate: UInt64(bytesPerSecond), now: now)
    }

    var isLimited: Bool { packets.isLimited || bytes.isLimited }

    /// The verdict on a datagram of `size` bytes leaving with `ecn`: dropped when either bucket
    /// is empty, marked when either marks.
    @inline(__always)
    mutating func police(_ size: Int, _ ecn: ECN, now: UInt64, marks: Bool, thresholds: ECNThresholds,
                         random: inout MarkingRandom) -> PolicerVerdict {
        let byPackets = packets.police(1, ecn, now: now, marks: marks, thresholds: thresholds, random: &random)
        guard byPackets != .drop else { return .drop }
        let byBytes = bytes.police(UInt64(size), ecn, now: now, marks: marks, thresholds: thresholds, random: &random)
        return byBytes == .pass ? byPackets : byBytes
    }
}
