/// The worker's time for one turn: monotonic nanoseconds, read once per turn by the worker
/// (`set`) and read by every table it drives, so all of them judge expiry, rate limits and
/// backlog against the same instant. Tests set it to move time without sleeping.
///
/// Contract: one instance per worker, touched by its thread only. A table reads `now` at most
/// once per datagram and passes the value down, so a turn's many datagrams cost one load each.
final class WorkerClock {
    /// Read per datagram by every table; written once per turn. No access overlaps another
    /// on the worker's one thread, so the dynamic exclusivity check would buy nothing.
    @exclusivity(unchecked) var now: UInt64

    init(now: UInt64) { self.now = now }
}
