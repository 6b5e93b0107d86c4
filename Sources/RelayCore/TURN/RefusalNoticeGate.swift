/// One line per kind of refusal cause per `intervalNanoseconds` on a worker, the first at once:
/// a relay out of ports refuses every Allocate, and one line a minute says so as well as one
/// per refusal would. The refusals held back are counted and reported on the next line of their kind.
///
/// Contract: fixed storage, nothing allocated after `init`.
struct RefusalNoticeGate {
    static let intervalNanoseconds: UInt64 = 60_000_000_000

    private var written = [UInt64?](repeating: nil, count: RefusalCause.kinds)
    private var suppressed = [UInt64](repeating: 0, count: RefusalCause.kinds)

    /// The number held back since the last line for `cause`'s kind when a line may be written
    /// at `now` (and that number starts again at 0); nil when it may not (and it is counted).
    mutating func take(_ cause: RefusalCause, now: UInt64) -> UInt64? {
        let kind = cause.kind
        if let last = written[kind], now &- last < Self.intervalNanoseconds {
            suppressed[kind] &+= 1
            return nil
        }
        written[kind] = now
        defer { suppressed[kind] = 0 }
        return suppressed[kind]
    }
}
