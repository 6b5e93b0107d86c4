import Glibc

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
        var bytes = Array(line.utf8)
        _ = Glibc.write(2, &bytes, bytes.count)
    }

    func info(_ message: String) { write(.info, message) }

    /// Written at every level: the line that says where the server listens, which tools
    /// (and people) wait for.
    func always(_ message: String) {
        var bytes = Array("mediarelay[info] \(message)\n".utf8)
        _ = Glibc.write(2, &bytes, bytes.count)
    }
    func warning(_ message: String) { write(.warning, message) }
    func error(_ message: String) { write(.error, message) }
}
