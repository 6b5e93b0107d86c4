import NetAddress

/// What a policer does with one datagram.
enum PolicerVerdict {
    /// Forwarded as it is.
    case pass
    /// Forwarded with CE in place of its ECT codepoint.
    case mark
    /// The bucket is empty: not forwarded.
    case drop
}

/// The rate limit of one session leg or TURN allocation: a token bucket of one second's burst
/// that drops a datagram only when empty, exactly as the relay always has, and before that
/// marks ECT datagrams CE by how much of the burst is in use (`ECNThresholds`). Not-ECT and CE
/// datagrams are never marked; with marking off it is the plain bucket.
///
/// Tokens are counted in units x 1e9 (a unit is a datagram or a byte), so refilling by the
/// nanoseconds elapsed is exact integer arithmetic. Owned by one worker's table: no locks.
struct Policer {
    /// Units per second; 0: no limit (every datagram passes, nothing is counted).
    let rate: UInt64
    private var tokens: UInt64
    private var lastRefill: UInt64

    /// The burst: one second of the rate.
    static let burstNanoseconds: UInt64 = 1_000_000_000

    /// A full bucket at `now`.
    init(rate: UInt64, now: UInt64) {
        self.rate = rate
        tokens = rate &* Self.burstNanoseconds
        lastRefill = now
    }

    var isLimited: Bool { rate > 0 }

    /// Takes `cost` units for a datagram that would leave with `ecn`. `marks` is the marking
    /// setting of the leg or allocation.
    @inline(__always)
    mutating func police(_ cost: UInt64, _ ecn: ECN, now: UInt64, marks: Bool, thresholds: ECNThresholds,
                         random: inout MarkingRandom) -> PolicerVerdict {
        guard rate > 0 else { return .pass }
        let depth = rate &* Self.burstNanoseconds
        refill(now: now)
        let price = cost &* 1_000_000_000
        guard tokens >= price else { return .drop }
        tokens &-= price
        guard marks else { return .pass }
        return thresholds.marks(ecn, deficit: depth &- tokens, depth: depth, random: &random) ? .mark : .pass
    }

    @inline(__always)
    private mutating func refill(now: UInt64) {
        let elapsed = min(now &- lastRefill, Self.burstNanoseconds)
        tokens = min(tokens &+ elapsed &* rate, rate &* Self.burstNanoseconds)
        lastRefill = now
    }

    /// The units that may pass elsewhere (the kernel fast path) before this bucket would mark
    /// any datagram (`marks`: from where ECT(1) marking starts) or drop one (empty): past that
    /// every datagram must meet `police`. 0 without a limit is never asked for.
    mutating func credit(now: UInt64, marks: Bool, thresholds: ECNThresholds) -> UInt64 {
        refill(now: now)
        let depth = rate &* Self.burstNanoseconds
        let floor = marks ? depth &- (depth >> 16) &* thresholds.l4s : 0
        return tokens > floor ? (tokens &- floor) / 1_000_000_000 : 0
    }

    /// Takes `units` that passed elsewhere (what the kernel forwarded on credit).
    mutating func charge(_ units: UInt64, now: UInt64) {
        tokens &-= min(tokens, units &* 1_000_000_000)
        refill(now: now)
    }
}

extension TrafficClass {
    /// This marking with CE for its ECN field and its DSCP untouched (for an ECT datagram a
    /// policer marks).
    @inline(__always)
    var markedCE: TrafficClass { TrafficClass(rawValue: rawValue | ECN.ce.rawValue) }
}
