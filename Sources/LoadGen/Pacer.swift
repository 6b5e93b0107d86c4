/// An absolute-deadline pacer: tick `k` is due at `origin + k * interval`.
///
/// Because deadlines are computed from the origin rather than from the previous send, a late
/// wake-up does not lower the long-run rate: the ticks owed are handed out on the next calls.
/// At most `maxBurst` ticks are released per call, so catching up after a stall spreads over
/// several calls instead of one burst that would overflow socket buffers. A debt larger than
/// `maxDebt` ticks is forgiven (the origin moves), so a long stall is not followed by a long
/// period above the target rate.
public struct Pacer: Sendable {
    /// Nanoseconds between ticks.
    public let interval: UInt64
    /// Most ticks released by one call of `due(at:)`.
    public let maxBurst: Int
    /// Most ticks owed before the schedule is reset.
    public let maxDebt: UInt64
    private var origin: UInt64
    private var released: UInt64 = 0
    /// Ticks forgiven after stalls; reported so a run can say it fell behind.
    public private(set) var skipped: UInt64 = 0

    /// - Parameters:
    ///   - ticksPerSecond: the target rate, > 0.
    ///   - start: CLOCK_MONOTONIC ns of tick 0.
    public init(ticksPerSecond: Double, start: UInt64, maxBurst: Int = 256, maxDebt: UInt64 = 4096) {
        precondition(ticksPerSecond > 0, "a pacer needs a positive rate")
        interval = max(1, UInt64((1e9 / ticksPerSecond).rounded()))
        self.maxBurst = max(1, maxBurst)
        self.maxDebt = max(UInt64(self.maxBurst), maxDebt)
        origin = start
    }

    /// Ticks released so far.
    public var releasedTicks: UInt64 { released }

    /// The number of ticks to perform now (0...maxBurst), counted as performed.
    public mutating func due(at now: UInt64) -> Int {
        guard now >= origin else { return 0 }
        let owedTotal = (now - origin) / interval + 1
        guard owedTotal > released else { return 0 }
        var debt = owedTotal - released
        if debt > maxDebt {
            // Forgive all but one burst: move the origin so that `released` is again on time.
            let forgiven = debt - UInt64(maxBurst)
            skipped += forgiven
            origin += forgiven * interval
            debt = UInt64(maxBurst)
        }
        let count = Int(min(debt, UInt64(maxBurst)))
        released += UInt64(count)
        return count
    }

    /// CLOCK_MONOTONIC ns at which the next tick is due.
    public var nextDeadline: UInt64 { origin + released * interval }
}
