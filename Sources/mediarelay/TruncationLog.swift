import DatagramEngine
import RelayCore

/// Says in the log that a datagram was longer than --max-datagram-size: the first one after a
/// minute without such a line, with its size and source port. The engines count every one
/// (drop reason `truncated`) and keep the latest's size and port in two plain fields; this
/// reads the workers' published snapshots on the main thread, once a second, so the packet
/// path neither allocates nor locks for it.
struct TruncationLog {
    static let interval = 60.0
    let limit: Int
    /// Each worker's truncated count at the last check: only datagrams after it are news.
    private var seen: [UInt64] = []
    private var lastLine = -Double.infinity

    init(limit: Int) { self.limit = limit }

    /// The line to log now, if any. `now` is monotonic seconds.
    mutating func line(_ workers: [WorkerStats], now: Double) -> String? {
        if seen.count != workers.count { seen = Array(repeating: 0, count: workers.count) }
        defer { seen = workers.map(\.engine.truncated) }
        guard now - lastLine >= TruncationLog.interval,
              let fresh = workers.indices.first(where: { workers[$0].engine.truncated > seen[$0] }),
              let datagram = workers[fresh].lastTruncated else { return nil }
        lastLine = now
        let total = workers.reduce(0) { $0 &+ $1.engine.truncated }
        return "dropped a datagram of \(datagram.size) bytes from port \(datagram.sourcePort): longer than "
            + "--max-datagram-size \(limit) (counted as truncated, \(total) so far; at most one such line a minute)"
    }
}
