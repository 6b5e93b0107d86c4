import NetAddress

/// How many notices of one kind a worker writes for each source address: a burst, then one
/// every `refillNanoseconds`, with the ones held back counted and reported on the source's next
/// line. A worker-wide bucket caps the sum, so a flood from forged addresses (each one new to
/// the table) cannot turn into a flood of log lines.
///
/// Contract: nothing is allocated after `init`. The slots are one direct-mapped table indexed
/// by the address hashed with the process's random seed; an address that meets another's slot
/// takes it over with a full burst, and the count held back for the one it replaces is lost
/// (the lines a person reads are bounded either way).
struct SourceNoticeBudget {
    /// Lines a source may have at once: enough for fail2ban's usual `maxretry` to see them all.
    static let burst: UInt64 = 5
    static let refillNanoseconds: UInt64 = 12_000_000_000
    /// The worker-wide bucket: lines at once, and one more per this many nanoseconds.
    static let workerBurst: UInt64 = 50
    static let workerRefillNanoseconds: UInt64 = 100_000_000

    private struct Slot {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var used = false
        var tokens: UInt64 = 0
        var refilled: UInt64 = 0
        var suppressed: UInt64 = 0
    }

    private var slots: [Slot]
    private let mask: Int
    private var worker = Bucket(tokens: SourceNoticeBudget.workerBurst, refilled: 0)

    /// `count` is rounded up to a power of two.
    init(count: Int = 256) {
        var size = 1
        while size < count { size <<= 1 }
        mask = size - 1
        slots = Array(repeating: Slot(), count: size)
    }

    /// Whether a line for `source` may be written at `now` (nanoseconds): the number held back
    /// since its last line when it may (and that number starts again at 0), nil when it may not
    /// (and it is counted).
    mutating func take(_ source: Endpoint, now: UInt64) -> UInt64? {
        var hasher = Hasher()
        hasher.combine(source.high)
        hasher.combine(source.low)
        let index = hasher.finalize() & mask
        if !slots[index].used || slots[index].high != source.high || slots[index].low != source.low {
            slots[index] = Slot(high: source.high, low: source.low, used: true, tokens: Self.burst, refilled: now, suppressed: 0)
        }
        var own = Bucket(tokens: slots[index].tokens, refilled: slots[index].refilled)
        own.refill(now: now, every: Self.refillNanoseconds, upTo: Self.burst)
        worker.refill(now: now, every: Self.workerRefillNanoseconds, upTo: Self.workerBurst)
        slots[index].tokens = own.tokens
        slots[index].refilled = own.refilled
        guard own.tokens > 0, worker.tokens > 0 else {
            slots[index].suppressed &+= 1
            return nil
        }
        slots[index].tokens -= 1
        worker.tokens -= 1
        defer { slots[index].suppressed = 0 }
        return slots[index].suppressed
    }

    /// Whole tokens, one added per interval since `refilled`.
    private struct Bucket {
        var tokens: UInt64
        var refilled: UInt64

        mutating func refill(now: UInt64, every interval: UInt64, upTo limit: UInt64) {
            guard now > refilled else { return }
            let earned = (now - refilled) / interval
            guard earned > 0 else { return }
            tokens = min(limit, tokens &+ earned)
            // The part of an interval already waited counts towards the next token.
            refilled = tokens == limit ? now : refilled &+ earned &* interval
        }
    }
}
