import Glibc
import Synchronization
import SystemSupport

/// Log lines, one per event, never per packet: lifecycle lines on stderr and the accounting
/// record of each allocation, session and forward-rule client that ends. `--log-format` says
/// how (`LogLine`): `mediarelay[LEVEL] message key=value...`, or one JSON object per line.
///
/// Contract: copies share one level and one format, so a reload that changes them (`setLevel`,
/// `setFormat`) takes effect for every thread that logs, workers included.
struct Log: Sendable {
    private let state: State

    init(level: LogLevel, format: LogFormat = .text) {
        state = State(rank: Log.rank(level), json: format == .json)
    }

    func setLevel(_ level: LogLevel) {
        state.rank.store(Log.rank(level), ordering: .relaxed)
    }

    func setFormat(_ format: LogFormat) {
        state.json.store(format == .json, ordering: .relaxed)
    }

    var format: LogFormat { state.json.load(ordering: .relaxed) ? .json : .text }

    private static func rank(_ level: LogLevel) -> Int {
        switch level {
        case .debug: 0
        case .info: 1
        case .warning: 2
        case .error: 3
        }
    }

    func write(_ level: LogLevel, _ message: String, _ fields: [LogField] = []) {
        guard Log.rank(level) >= state.rank.load(ordering: .relaxed) else { return }
        line(level, message, fields)
    }

    func info(_ message: String) { write(.info, message) }

    /// Written at every level: the line that says where the server listens, which tools
    /// (and people) wait for.
    func always(_ message: String) { line(.info, message, []) }
    func warning(_ message: String) { write(.warning, message) }
    func error(_ message: String) { write(.error, message) }

    /// A record (an accounting line): written at every level, since it is what an operator
    /// bills or answers an abuse report from, not chatter.
    func record(_ message: String, _ fields: [LogField]) { line(.info, message, fields) }

    private func line(_ level: LogLevel, _ message: String, _ fields: [LogField]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanoseconds = UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
        Log.emit(LogLine.render(format, level: level.rawValue, message: message, fields: fields, timeNanoseconds: nanoseconds))
    }

    /// One write(2) per line (through the gate, so a signal cannot cut it): lines from
    /// different threads never interleave.
    static func emit(_ line: String) { emit(Array(line.utf8)) }

    static func emit(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            SystemCall.ignoringFailure { Glibc.write(2, buffer.baseAddress, buffer.count) }
        }
    }

    /// Atomics need a stable address: they live in a class the copies share.
    private final class State: Sendable {
        let rank: Atomic<Int>
        let json: Atomic<Bool>
        init(rank: Int, json: Bool) {
            self.rank = Atomic(rank)
            self.json = Atomic(json)
        }
    }
}
