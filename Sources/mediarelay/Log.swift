import Glibc
import Synchronization
import SystemSupport

/// Lifecycle log lines on stderr, one per event, `mediarelay[LEVEL] message`. Never per packet.
///
/// Contract: copies share one level, so a reload that changes it (`setLevel`) takes effect for
/// every thread that logs.
struct Log: Sendable {
    private let threshold: LevelBox

    init(level: LogLevel) {
        threshold = LevelBox(rank: Log.rank(level))
    }

    func setLevel(_ level: LogLevel) {
        threshold.rank.store(Log.rank(level), ordering: .relaxed)
    }

    private static func rank(_ level: LogLevel) -> Int {
        switch level {
        case .debug: 0
        case .info: 1
        case .warning: 2
        case .error: 3
        }
    }

    func write(_ level: LogLevel, _ message: String) {
        guard Log.rank(level) >= threshold.rank.load(ordering: .relaxed) else { return }
        Log.emit("mediarelay[\(level.rawValue)] \(message)\n")
    }

    func info(_ message: String) { write(.info, message) }

    /// Written at every level: the line that says where the server listens, which tools
    /// (and people) wait for.
    func always(_ message: String) { Log.emit("mediarelay[info] \(message)\n") }
    func warning(_ message: String) { write(.warning, message) }
    func error(_ message: String) { write(.error, message) }

    /// One write(2) per line (through the gate, so a signal cannot cut it): lines from
    /// different threads never interleave.
    static func emit(_ line: String) {
        var bytes = Array(line.utf8)
        SystemCall.ignoringFailure { Glibc.write(2, &bytes, bytes.count) }
    }

    /// An atomic needs a stable address: it lives in a class the copies share.
    private final class LevelBox: Sendable {
        let rank: Atomic<Int>
        init(rank: Int) { self.rank = Atomic(rank) }
    }
}
