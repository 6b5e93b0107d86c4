import ClientSockets
import Foundation
import Glibc
import Synchronization
import SystemSupport

/// The one launcher of the relay executable, for the load generator's `compare`, engine-bench
/// and every test target: the relay spawned with its stderr on a pipe, considered up once it
/// has printed `http listening on HOST:PORT` and GET /healthz answers 200 (`Readiness`),
/// stopped with SIGTERM. Or, as `.reference`, the C reference forwarder
/// (bench/reference/forwarder.c), up once it has printed `listening on HOST:PORT` (on stdout,
/// which shares the pipe); it has no HTTP.
///
/// A thread reads the pipe from the start to the child's exit (a full pipe would block the
/// relay's logging) and keeps what it said (`log`, bounded). The child is reaped once, by
/// whichever of `isRunning`, `waitForExit`, `stop` or deinit sees it gone first; deinit kills
/// a child still running, so a test that fails half-way leaves no relay behind.
public final class ServerProcess: Sendable {
    /// Which server: the relay executable, or the C reference forwarder.
    public enum Kind: Sendable {
        case relay
        case reference
    }

    /// What `init` waits for before it returns.
    public enum Readiness: Sendable {
        /// The listening line, then (for the relay) GET /healthz answering 200.
        case healthy
        /// The listening line only.
        case listening
        /// Nothing: the caller watches the log or the exit (start-up that must fail, systemd's
        /// notify socket).
        case started
    }

    public let pid: pid_t
    /// `HOST:PORT` the relay's HTTP listener bound (for the reference, its first socket's);
    /// nil with `Readiness.started`.
    public let listening: String?
    private let child: Child

    /// Bytes of the log kept; past it the oldest lines go (a relay logging at debug for long).
    static let logLimit = 4 << 20

    /// What the reading thread and the caller share: the child's lines, whether its output
    /// has ended, and its exit status once reaped. A class, so the reader holds it before
    /// `init` is done.
    private final class Child: Sendable {
        let pid: pid_t
        let output = Mutex(Output())
        let exitStatus = Mutex<Int32?>(nil)

        init(pid: pid_t) { self.pid = pid }

        struct Output {
            var lines: [String] = []
            var bytes = 0
            var closed = false
        }

        /// The exit status once reaped (here or before); nil while the child runs.
        func reap(waiting: Bool) -> Int32? {
            exitStatus.withLock { known in
                if let known { return known }
                var status: Int32 = 0
                switch SystemCall.outcome({ Int(waitpid(pid, &status, waiting ? 0 : WNOHANG)) }) {
                case .done(let reaped) where reaped == Int(pid):
                    // WIFEXITED / WEXITSTATUS / WTERMSIG, which are C macros.
                    known = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
                case .failed:
                    // Not our child any more (reaped elsewhere): gone, with nothing to report.
                    known = -1
                default:
                    break
                }
                return known
            }
        }

        /// SIGKILL and reap, for a child that must not outlive its launcher.
        func kill() {
            exitStatus.withLock { status in if status == nil { _ = Glibc.kill(pid, SIGKILL) } }
            _ = reap(waiting: true)
        }

        /// Reads the pipe to its end, keeping whole lines (at most `logLimit` bytes of them).
        func read(_ fd: Int32) {
            var lines = LineSplitter()
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                guard case .done(let n) = SystemCall.outcome({ Glibc.read(fd, &chunk, chunk.count) }), n > 0 else { break }
                let complete = lines.append(chunk[0..<n])
                output.withLock { out in
                    for line in complete {
                        out.lines.append(line)
                        out.bytes += line.utf8.count + 1
                    }
                    while out.bytes > ServerProcess.logLimit, let first = out.lines.first {
                        out.bytes -= first.utf8.count + 1
                        out.lines.removeFirst()
                    }
                }
            }
            SystemCall.close(fd)
            output.withLock { $0.closed = true }
        }
    }

    /// - Parameter prefix: a command the server is started under, such as `ip netns exec NAME`
    ///   or a profiler (it should exec the server in place, so `pid` stays the server's).
    /// - Parameter environment: set on top of this process's environment, from which a control
    ///   token and systemd's notify variables are taken out first (they change the relay's
    ///   behaviour); a caller that wants them names them here.
    public init(path: String, arguments: [String], kind: Kind = .relay, prefix: [String] = [],
                environment: [String: String] = [:], ready: Readiness = .healthy,
                startTimeoutMs: Int = 10_000) throws(LoadError) {
        guard access(path, X_OK) == 0 else { throw LoadError("\(path): not an executable file (build it first: swift build -c release)") }
        let marker = kind == .relay ? "http listening on " : "listening on "
        var fds: [Int32] = [0, 0]
        let piped = SystemCall.outcome { Int(pipe(&fds)) }
        guard piped == .done(0) else { throw LoadError("pipe: \(errnoText(piped))") }
        // Neither end may leak into the relay beyond its stderr (dup2 clears the flag there).
        for fd in fds { SystemCall.ignoringFailure { Int(fcntl(fd, F_SETFD, FD_CLOEXEC)) } }
        let readEnd = fds[0], writeEnd = fds[1]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
        if kind == .reference {
            posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        let command = prefix + [path] + arguments
        let argv = command.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var variables = ProcessInfo.processInfo.environment
        for name in ["MEDIARELAY_CONTROL_TOKEN", "NOTIFY_SOCKET", "WATCHDOG_USEC"] { variables[name] = nil }
        variables.merge(environment) { $1 }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in envp { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawnp(&child, command[0], &actions, nil, argv, envp)
        SystemCall.close(writeEnd)
        guard rc == 0 else {
            SystemCall.close(readEnd)
            throw LoadError("starting \(path): \(errnoText(rc))")
        }
        pid = child
        let state = Child(pid: child)
        self.child = state
        let reader = Thread { state.read(readEnd) }
        reader.name = "relay-stderr"
        reader.start()
        guard ready != .started else {
            listening = nil
            return
        }
        let deadline = MonotonicClock.now() + UInt64(startTimeoutMs) * 1_000_000
        var found: String?
        while found == nil && MonotonicClock.now() < deadline {
            found = state.output.withLock { $0.lines.lazy.compactMap { Self.listeningAddress(in: $0, marker: marker) }.first }
            if found == nil {
                if state.output.withLock({ $0.closed }) && state.reap(waiting: false) != nil { break }
                MonotonicClock.sleep(until: MonotonicClock.now() + 10_000_000)
            }
        }
        guard let found else {
            state.kill()
            let last = state.output.withLock { $0.lines.suffix(3) }.joined(separator: " | ")
            throw LoadError("\(command.joined(separator: " ")): no '\(marker)' line within \(startTimeoutMs) ms\(last.isEmpty ? "" : "; it said: \(last)")")
        }
        listening = found
        guard kind == .relay, ready == .healthy else { return }
        let control = RelayControl(client: try HTTPClient(url: "http://\(found)", timeoutMs: 1000), token: nil)
        let healthDeadline = MonotonicClock.now() + UInt64(max(startTimeoutMs, 5000)) * 1_000_000
        while !control.healthy() {
            guard MonotonicClock.now() < healthDeadline else {
                stop()
                throw LoadError("\(path): GET http://\(found)/healthz did not answer 200 within \(max(startTimeoutMs, 5000)) ms")
            }
            MonotonicClock.sleep(until: MonotonicClock.now() + 20_000_000)
        }
    }

    deinit { child.kill() }

    /// `HOST:PORT` of the HTTP listener; the relay started with `Readiness.started` has none
    /// known, and this is empty.
    public var http: String { listening ?? "" }

    /// The port of `listening`.
    public var httpPort: UInt16? { listening?.split(separator: ":").last.flatMap { UInt16($0) } }

    /// The same as `pid`, named as Foundation's Process names it.
    public var processIdentifier: pid_t { pid }

    /// The `HOST:PORT` after `http listening on ` (or another marker), if the line has it; in
    /// a JSON line (`--log-format json`) it ends at the message's closing quote.
    public static func listeningAddress(in line: String, marker: String = "http listening on ") -> String? {
        guard let range = line.range(of: marker) else { return nil }
        let rest = line[range.upperBound...].prefix { !$0.isWhitespace && $0 != "\"" }
        return rest.isEmpty ? nil : String(rest)
    }

    /// What the child has written on stderr (and, for the reference, stdout) so far.
    public var log: String { child.output.withLock { $0.lines.map { $0 + "\n" }.joined() } }

    /// Its last lines, for error messages.
    public var lastLines: [String] { child.output.withLock { Array($0.lines.suffix(20)) } }

    /// The first line containing `text`, or nil once the child has exited or `timeout` seconds
    /// have passed without it.
    public func waitForLine(containing text: String, timeout: Double) -> String? {
        let deadline = MonotonicClock.now() + UInt64(timeout * 1e9)
        while true {
            if let line = child.output.withLock({ $0.lines.first { $0.contains(text) } }) { return line }
            guard isRunning || !child.output.withLock({ $0.closed }) else { return nil }
            guard MonotonicClock.now() < deadline else { return nil }
            MonotonicClock.sleep(until: MonotonicClock.now() + 10_000_000)
        }
    }

    /// Whether the child has not exited yet (it is reaped here once it has).
    public var isRunning: Bool { reap(waiting: false) == nil }

    /// The exit status once the child has exited within `timeout` seconds (the exit code, or
    /// 128 plus the signal that ended it, as a shell says it); nil while it still runs. Once it
    /// has exited, `log` holds all it wrote (the reader is given a moment to reach the pipe's end).
    public func waitForExit(timeout: Double) -> Int32? {
        let deadline = MonotonicClock.now() + UInt64(timeout * 1e9)
        while true {
            if let status = reap(waiting: false) {
                let drained = MonotonicClock.now() + 1_000_000_000
                while !child.output.withLock({ $0.closed }) && MonotonicClock.now() < drained {
                    MonotonicClock.sleep(until: MonotonicClock.now() + 5_000_000)
                }
                return status
            }
            guard MonotonicClock.now() < deadline else { return nil }
            MonotonicClock.sleep(until: MonotonicClock.now() + 10_000_000)
        }
    }

    /// Sends `number` to the child, unless it has been reaped (its pid may be another's now).
    public func signal(_ number: Int32) {
        child.exitStatus.withLock { status in if status == nil { _ = kill(pid, number) } }
    }

    /// SIGTERM, then wait up to `timeoutMs` (SIGKILL after that). Returns the exit status as
    /// `waitForExit` says it, or nil if the child had to be killed. `compare` starts the relay
    /// with --drain-seconds 0, so a healthy one exits at once; the bound keeps a stuck relay
    /// from eating a run's time budget.
    @discardableResult
    public func stop(timeoutMs: Int = 3000) -> Int32? {
        if let status = reap(waiting: false) { return status }
        signal(SIGTERM)
        if let status = waitForExit(timeout: Double(timeoutMs) / 1000) { return status }
        signal(SIGKILL)
        _ = reap(waiting: true)
        return nil
    }

    private func reap(waiting: Bool) -> Int32? { child.reap(waiting: waiting) }
}

/// Splits a byte stream into lines, keeping a partial last line for the next chunk.
struct LineSplitter: Sendable {
    private var pending: [UInt8] = []

    mutating func append(_ bytes: ArraySlice<UInt8>) -> [String] {
        pending += bytes
        var lines: [String] = []
        while let newline = pending.firstIndex(of: 10) {
            lines.append(String(decoding: pending[..<newline], as: UTF8.self))
            pending.removeSubrange(...newline)
        }
        return lines
    }
}
