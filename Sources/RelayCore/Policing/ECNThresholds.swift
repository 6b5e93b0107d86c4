import NetAddress

/// Where in a rate limit's burst the relay starts marking ECT datagrams CE, and how the mark
/// probability grows from there to the empty bucket. One set serves every limit (session legs,
/// TURN allocations, the egress cap).
///
/// The measure is the share of the burst in use, the bucket's deficit over its depth: a token
/// bucket drained at the cap is the queue a link of that rate would hold (RFC 5670's threshold
/// meter marks on the same fill). Nothing waits in a policer, so the thresholds sit deep in the
/// burst rather than at a router's few milliseconds: they warn a sender while most of its burst
/// is still there to absorb the next video frame, and they are far beyond what a worker's
/// receive batch (datagrams that arrived over a few milliseconds, handed over at once) can use.
///
/// - ECT(1) (L4S, RFC 9331): probability ramps linearly from 0 at `l4s` to 1 at the empty bucket.
/// - ECT(0) (classic, RFC 3168): p' ramps linearly from 0 at `classic` to 1 at the empty bucket,
///   and the mark probability is p'^2.
/// - Coupling (RFC 9332, k = 2): ECT(1) is marked with at least 2 x p', so in one bucket a
///   scalable flow (rate ~ 1/p) and a classic one (rate ~ 1/sqrt(p)) settle at about equal rates.
///
/// Contract: `l4s < classic`, both in 1...99 percent (`OptionKey` refuses anything else).
/// Not-ECT and CE are never marked by `marks`.
public struct ECNThresholds: Sendable, Equatable {
    /// The share of the burst in use (in 1/65,536) from which ECT(1) may be marked.
    public let l4s: UInt64
    /// The same for ECT(0): deeper, as a classic sender needs room for its sawtooth.
    public let classic: UInt64

    /// The documented defaults: ECT(1) from a quarter of the burst, ECT(0) from half of it.
    public static let defaultL4SPercent = 25
    public static let defaultClassicPercent = 50

    public init(l4sPercent: Int = ECNThresholds.defaultL4SPercent, classicPercent: Int = ECNThresholds.defaultClassicPercent) {
        l4s = UInt64(l4sPercent) << 16 / 100
        classic = UInt64(classicPercent) << 16 / 100
    }

    /// Whether a datagram leaving with `ecn`, after which `deficit` of the bucket's `depth` is in
    /// use (any unit, the same for both), is to be marked CE; `random` decides within a ramp.
    /// Integer arithmetic; a division only once the deficit is past the shallow threshold.
    @inline(__always)
    func marks(_ ecn: ECN, deficit: UInt64, depth: UInt64, random: inout MarkingRandom) -> Bool {
        let unit = depth >> 16
        let l4sStart = unit &* l4s
        guard deficit > l4sStart, ecn == .ect1 || ecn == .ect0 else { return false }
        let base = Self.ramp(deficit, from: unit &* classic, to: depth)
        let probability: UInt64 = if ecn == .ect1 {
            max(Self.ramp(deficit, from: l4sStart, to: depth), min(base << 1, Self.certain))
        } else {
            base == Self.certain ? base : (base &* base) >> 32
        }
        return UInt64(random.next()) < probability
    }

    /// Probability 1 on the 2^32 scale of `ramp` (a random UInt32 is always below it).
    static let certain: UInt64 = 1 << 32

    /// (x - start) / (end - start) on a 2^32 scale, 0 below `start`, `certain` from `end` on.
    @inline(__always)
    static func ramp(_ x: UInt64, from start: UInt64, to end: UInt64) -> UInt64 {
        guard x > start else { return 0 }
        guard x < end else { return certain }
        let above = x &- start
        // (above << 32) / span in 128 bits; above < span, so the quotient fits in 32 bits.
        return (end &- start).dividingFullWidth((high: above >> 32, low: above << 32)).quotient
    }
}
