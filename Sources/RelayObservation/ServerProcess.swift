import ClientSockets
import SystemSupport
import Foundation
import Glibc
import Synchronization

/// A relay started by `compare`: spawned with its stderr on a pipe, considered up once it has
/// printed `http listening on HOST:PORT` and GET /healthz answers 200, stopped with SIGTERM.
/// Or, as `.reference`, the C reference forwarder (bench/reference/forwarder.c), up once it has
/// printed `listening on HOST:PORT` (on stdout, which shares the pipe); it has no HTTP.
///
/// After start-up a thread keeps reading the pipe (a full pipe would block the relay's logging)
/// and keeps the last lines for error messages.
public final class ServerProcess: Sendable {
    public enum Kind: Sendable {
        case relay
        case reference
    }

    public let pid: pid_t
    /// `HOST:PORT` the relay's HTTP listener bound; for the reference, its first socket's.
    public let http: String
    private let tail = Mutex<[String]>([])

    /// - Parameter prefix: a command the server is started under, such as `ip netns exec NAME`
    ///   (it must exec the server in place, so `pid` stays the server's).
    public init(path: String, arguments: [String], kind: Kind = .relay, prefix: [String] = [],
                startTimeoutMs: Int = 10_000) throws(LoadError) {
        guard access(path, X_OK) == 0 else { throw LoadError("--server \(path): not an executable file (build it first: swift build -c release)") }
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
        if kind == .reference { posix_spawn_file_actions_adddup2(&actions, writeEnd, 1) }
        let command = prefix + [path] + arguments
        let argv = command.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        // The relay under test gets this environment minus what would change its behaviour:
        // a control token (every request would need it) and systemd's notify socket.
        let environment = ProcessInfo.processInfo.environment
            .filter { $0.key != "MEDIARELAY_CONTROL_TOKEN" && $0.key != "NOTIFY_SOCKET" && $0.key != "WATCHDOG_USEC" }
            .map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in environment { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawnp(&child, command[0], &actions, nil, argv, environment)
        SystemCall.close(writeEnd)
        guard rc == 0 else {
            SystemCall.close(readEnd)
            throw LoadError("starting \(path): \(errnoText(rc))")
        }
        pid = child
        // Read stderr lines until the listening line, the relay's exit, or the timeout.
        let deadline = MonotonicClock.now() + UInt64(startTimeoutMs) * 1_000_000
        var lines = LineSplitter()
        var seen: [String] = []
        var found: String?
        var chunk = [UInt8](repeating: 0, count: 4096)
        reading: while found == nil {
            let now = MonotonicClock.now()
            guard now < deadline else { break }
            var p = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            guard case .done(let ready) = SystemCall.outcome({ Int(poll(&p, 1, Int32((deadline - now) / 1_000_000 + 1))) }),
                  ready > 0 else { continue }
            guard case .done(let n) = SystemCall.outcome({ read(readEnd, &chunk, chunk.count) }), n > 0 else { break }
            for line in lines.append(chunk[0..<n]) {
                seen.append(line)
                if found == nil { found = Self.listeningAddress(in: line, marker: marker) }
            }
        }
        guard let found else {
            kill(child, SIGKILL)
            var status: Int32 = 0
            SystemCall.ignoringFailure { Int(waitpid(child, &status, 0)) }
            SystemCall.close(readEnd)
            let last = seen.suffix(3).joined(separator: " | ")
            throw LoadError("\(command.joined(separator: " ")): no '\(marker)' line within \(startTimeoutMs) ms\(last.isEmpty ? "" : "; it said: \(last)")")
        }
        http = found
        tail.withLock { $0 = Array(seen.suffix(20)) }
        let started = lines
        let drainer = Thread { [self] in drain(readEnd, started) }
        drainer.name = "relay-stderr"
        drainer.start()
        guard kind == .relay else { return }
        let control = RelayControl(client: try HTTPClient(url: "http://\(found)", timeoutMs: 1000), token: nil)
        let healthDeadline = MonotonicClock.now() + 5_000_000_000
        while !control.healthy() {
            guard MonotonicClock.now() < healthDeadline else {
                stop()
                throw LoadError("\(path): GET http://\(found)/healthz did not answer 200 within 5 s")
            }
            MonotonicClock.sleep(until: MonotonicClock.now() + 20_000_000)
        }
    }

    /// The `HOST:PORT` after `http listening on ` (or another marker), if the line has it.
    public static func listeningAddress(in line: String, marker: String = "http listening on ") -> String? {
        guard let range = line.range(of: marker) else { return nil }
        let rest = line[range.upperBound...].prefix { !$0.isWhitespace }
        return rest.isEmpty ? nil : String(rest)
    }

    private func drain(_ fd: Int32, _ started: LineSplitter) {
        var lines = started
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            guard case .done(let n) = SystemCall.outcome({ read(fd, &chunk, chunk.count) }), n > 0 else { break }
            for line in lines.append(chunk[0..<n]) {
                tail.withLock { $0.append(line); if $0.count > 20 { $0.removeFirst() } }
            }
        }
        SystemCall.close(fd)
    }

    /// The relay's last stderr lines.
    public var lastLines: [String] { tail.withLock { $0 } }

    /// SIGTERM, then wait up to `timeoutMs` (SIGKILL after that). Returns the exit status as
    /// waitpid reports it, or nil if the relay had to be killed. The relay is started with
    /// --drain-seconds 0, so a healthy one exits at once; the bound keeps a stuck relay from
    /// eating the comparison's time budget.
    @discardableResult
    public func stop(timeoutMs: Int = 3000) -> Int32? {
        kill(pid, SIGTERM)
        let deadline = MonotonicClock.now() + UInt64(timeoutMs) * 1_000_000
        var status: Int32 = 0
        while MonotonicClock.now() < deadline {
            switch SystemCall.outcome({ Int(waitpid(pid, &status, WNOHANG)) }) {
            case .done(let reaped) where reaped == Int(pid): return status
            case .failed: return nil
            default: break
            }
            MonotonicClock.sleep(until: MonotonicClock.now() + 10_000_000)
        }
        kill(pid, SIGKILL)
        SystemCall.ignoringFailure { Int(waitpid(pid, &status, 0)) }
        return nil
    }
}

/// Splits a byte stream into lines, keeping a partial last line for the next chunk.
package struct LineSplitter: Sendable {
    private var pending: [UInt8] = []

    package mutating func append(_ bytes: ArraySlice<UInt8>) -> [String] {
        pending += bytes
        var lines: [String] = []
        while let newline = pending.firstIndex(of: 10) {
            lines.append(String(decoding: pending[..<newline], as: UTF8.self))
            pending.removeSubrange(...newline)
        }
        return lines
    }
}
