import Glibc
import SystemSupport

/// Lifecycle log lines on stderr, one per event, `mediarelay[LEVEL] message`. Never per packet.
struct Log: Sendable {
    let level: LogLevel

    private static func rank(_ level: LogLevel) -> Int {
        switch level {
        case .debug: 0
        case .info: 1
        case .warning: 2
        case .error: 3
        }
    }

    func write(_ level: LogLevel, _ message: String) {
        guard Log.rank(level) >= Log.rank(self.level) else { return }
        let line = "mediarelay[\(level.rawValue)] \(message)\n"
        // One write(2) per line: lines from different threads never interleave.
        Log.writeStandardError(line)
    }

    /// One write(2) of the whole line to stderr (through the gate, so a signal cannot cut it).
    static func writeStandardError(_ line: String) {
        var bytes = Array(line.utf8)
        SystemCall.ignoringFailure { Glibc.write(2, &bytes, bytes.count) }
    }

    func info(_ message: String) { write(.info, message) }

    /// Written at every level: the line that says where the server listens, which tools
    /// (and people) wait for.
    func always(_ message: String) {
        Log.writeStandardError("mediarelay[info] \(message)\n")
    }
    func warning(_ message: String) { write(.warning, message) }
    func error(_ message: String) { write(.error, message) }
}
