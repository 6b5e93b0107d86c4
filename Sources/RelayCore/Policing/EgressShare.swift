import NetAddress

/// One worker's share of the egress cap: credit taken from the shared `EgressBucket` a chunk
/// at a time and spent per datagram with plain arithmetic; whatever a turn leaves unspent goes
/// back at its end (`endTurn`), so an idle worker holds none. The marks for a chunk's datagrams
/// follow the burst in use when the chunk was taken (a chunk is 1 ms of the rate, the burst
/// 100 ms: the measure is at most a percent stale). Only its worker's thread touches it.
final class EgressShare {
    let bucket: EgressBucket?
    /// Whether there is a cap at all: the tables check it before anything else.
    let isOn: Bool
    @exclusivity(unchecked) private var credit: UInt64 = 0
    @exclusivity(unchecked) private var inUse: UInt64 = 0

    init(_ bucket: EgressBucket?) {
        self.bucket = bucket
        isOn = bucket != nil
    }

    /// Takes `bytes` for a datagram that would leave with `ecn`; `marks` is the marking setting
    /// of its session, allocation or rule.
    @inline(__always)
    func police(_ bytes: Int, _ ecn: ECN, now: UInt64, marks: Bool, thresholds: ECNThresholds,
                random: inout MarkingRandom) -> PolicerVerdict {
        guard let bucket else { return .pass }
        let cost = UInt64(bytes)
        if credit < cost {
            let taken = bucket.take(max(bucket.chunkBytes, cost &- credit), now: now)
            credit &+= taken.bytes
            inUse = taken.inUse
            guard credit >= cost else { return .drop }
        }
        credit &-= cost
        guard marks else { return .pass }
        return thresholds.marks(ecn, deficit: inUse, depth: bucket.depthNanoseconds, random: &random) ? .mark : .pass
    }

    /// Gives `bytes` taken for the kernel fast path's credit and not spent back to the shared
    /// bucket (nothing without a cap).
    func giveBack(_ bytes: UInt64) {
        guard bytes > 0, let bucket else { return }
        bucket.giveBack(bytes)
    }

    /// Takes credit for the kernel fast path's entries at `now`: what the bucket gives before
    /// ECT(1) marking would start (0 past that, or without a cap). The worker shares it out
    /// among the entries and gives back what they did not spend.
    func takeForKernel(now: UInt64, thresholds: ECNThresholds) -> UInt64 {
        guard let bucket else { return 0 }
        let markingStarts = (bucket.depthNanoseconds >> 16) &* thresholds.l4s
        let inUse = bucket.inUse(now: now)
        guard inUse < markingStarts else { return 0 }
        return bucket.take(EgressBucket.bytes(markingStarts &- inUse, rate: bucket.rate), now: now).bytes
    }

    /// The worker's turn is over: unspent credit goes back to the shared bucket.
    func endTurn() {
        guard credit > 0, let bucket else { return }
        bucket.giveBack(credit)
        credit = 0
    }
}
