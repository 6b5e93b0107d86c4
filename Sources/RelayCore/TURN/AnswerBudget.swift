import DatagramEngine
import NetAddress

/// Per source address, a token bucket of the answers a worker's TURN server gives to requests
/// that did not authenticate (401 challenges, 438, 400 before the credentials were checked):
/// response rate limiting as DNS servers do it (RRL). Such an answer goes to an address nobody
/// has proved to own, so a forged source could otherwise aim every answer at a victim; with
/// the budget the relay reflects at most a burst and then `rate` answers a second at it.
///
/// A source earns answers: every request from it that authenticates (over UDP) adds
/// `earnedPerAuthentication` to its bucket, above the burst, up to `creditSeconds` of the rate.
/// A request authenticates only with a nonce the relay sent to that address, so only a source
/// that receives there earns: clients behind one NAT address that start together grow their
/// address's budget as they get in (each one that gets in pays for the next two), while a
/// forged source, whose answers go to a victim that never signs anything, stays at a burst and
/// then the rate. Credit does not refill; it is spent before the burst's tokens.
///
/// Per worker, with no lock: SO_REUSEPORT hashes each 5-tuple to one worker, so the requests
/// from one address and port always meet the same bucket, while one address using many ports
/// may reach every worker and be answered up to workers x rate a second.
///
/// Contract: nothing is allocated after `init`. The slots are one fixed table, `sets` sets of
/// `ways` slots, the set chosen by the address hashed with the process's random seed, so
/// nobody can aim many addresses at one set. An address not in its set takes the slot whose
/// bucket has refilled to the burst and holds no credit (forgetting it loses nothing: a new
/// address starts full), else the one charged longest ago; a source evicted that way gets at
/// most one more burst, and one that held credit loses it (to earn it again).
/// IPv4 addresses count one by one; IPv6 ones by /64, since one site holds a whole /64 and
/// could otherwise spend a fresh address on every request (DNS RRL groups by /56).
struct AnswerBudget {
    static let ways = 4
    static let burstSeconds = UInt64(TurnLimits.burstSeconds)
    /// Answers a request that authenticates earns its source: its own 401 back, and one more,
    /// so a crowd behind one address doubles its answers with every round of retransmissions.
    static let earnedPerAuthentication: UInt64 = 2
    /// The most credit a source holds, in seconds of the rate (1,000 answers at the default):
    /// what a forger could spend at an address whose users authenticated a lot, once.
    static let creditSeconds = UInt64(TurnLimits.creditSeconds)

    private struct Slot {
        /// The address (an IPv6 one cut to its /64); a slot never used holds ::, which no
        /// datagram comes from, and reads as a full bucket.
        var high: UInt64 = 0
        var low: UInt64 = 0
        /// Answers x 1e9: one answer costs 1e9, and a nanosecond at `rate` adds `rate` up to
        /// the burst; earned credit lies above it.
        var tokens: UInt64 = 0
        var charged: UInt64 = 0
    }

    private var slots: [Slot]
    private let setMask: Int

    /// `sets` is rounded up to a power of two; 1,024 sets of 4 ways are 128 KiB.
    init(sets: Int = 1024) {
        var count = 1
        while count < sets { count <<= 1 }
        setMask = count - 1
        slots = Array(repeating: Slot(), count: count * AnswerBudget.ways)
    }

    /// Takes one answer from `source`'s bucket at `now` (nanoseconds), refilled at `rate`
    /// answers a second up to a burst of `burstSeconds` x `rate`. False when the bucket is
    /// empty: the answer must not be sent. A rate of 0 means no limit.
    mutating func take(_ source: Endpoint, now: UInt64, rate: Int) -> Bool {
        guard rate > 0 else { return true }
        let rate = UInt64(rate)
        let chosen = slot(for: source, now: now, rate: rate)
        let tokens = refilled(slots[chosen], now: now, rate: rate)
        slots[chosen].charged = now
        guard tokens >= 1_000_000_000 else {
            slots[chosen].tokens = tokens
            return false
        }
        slots[chosen].tokens = tokens - 1_000_000_000
        return true
    }

    /// Credits `source` for a request that authenticated at `now`: `earnedPerAuthentication`
    /// answers more, up to the burst plus `creditSeconds` of the rate. Nothing with a rate of 0.
    mutating func earn(_ source: Endpoint, now: UInt64, rate: Int) {
        guard rate > 0 else { return }
        let rate = UInt64(rate)
        let chosen = slot(for: source, now: now, rate: rate)
        let tokens = refilled(slots[chosen], now: now, rate: rate) + AnswerBudget.earnedPerAuthentication * 1_000_000_000
        slots[chosen].tokens = min(tokens, ceiling(rate))
        slots[chosen].charged = now
    }

    /// The slot of `source`'s address (an IPv6 one cut to its /64), taken over for it when the
    /// address has none.
    private mutating func slot(for source: Endpoint, now: UInt64, rate: UInt64) -> Int {
        let high = source.high
        let low = source.isIPv4 ? source.low : 0
        let first = set(high, low) * AnswerBudget.ways
        var oldest = first
        for index in first..<(first + AnswerBudget.ways) {
            if slots[index].high == high && slots[index].low == low { return index }
            if slots[index].charged < slots[oldest].charged { oldest = index }
        }
        var chosen = oldest
        for index in first..<(first + AnswerBudget.ways) where refilled(slots[index], now: now, rate: rate) == full(rate) {
            chosen = index
            break
        }
        slots[chosen] = Slot(high: high, low: low, tokens: full(rate), charged: now)
        return chosen
    }

    private func full(_ rate: UInt64) -> UInt64 { AnswerBudget.burstSeconds * 1_000_000_000 * rate }

    private func ceiling(_ rate: UInt64) -> UInt64 { full(rate) + AnswerBudget.creditSeconds * 1_000_000_000 * rate }

    /// The slot's tokens at `now`: refilled up to the burst, credit above it kept as it is. The
    /// time is capped at the burst's seconds, which refill any bucket, so the product cannot
    /// overflow.
    private func refilled(_ slot: Slot, now: UInt64, rate: UInt64) -> UInt64 {
        guard slot.tokens < full(rate) else { return slot.tokens }
        let elapsed = min(now &- slot.charged, AnswerBudget.burstSeconds * 1_000_000_000)
        return min(slot.tokens &+ elapsed &* rate, full(rate))
    }

    private func set(_ high: UInt64, _ low: UInt64) -> Int {
        var hasher = Hasher()
        hasher.combine(high)
        hasher.combine(low)
        return hasher.finalize() & setMask
    }
}
