import ClientSockets
import SystemSupport
import Glibc

/// One HTTP/1.1 answer.
public struct HTTPClientResponse: Sendable {
    public let status: Int
    public let body: [UInt8]
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A tiny blocking HTTP/1.1 client over a raw TCP socket, one request per connection
/// (`Connection: close`).
///
/// Why not URLSession: on Linux it brings its own threads and run loop, which would share the
/// two cores with the relay being measured, and its timeouts behave differently across
/// toolchains. Every step here is bounded: connect, send and receive share one deadline, and
/// answers longer than `maxResponseBytes` are refused.
public struct HTTPClient: Sendable {
    public let server: SocketAddress
    public let timeoutMs: Int
    public let maxResponseBytes: Int

    public init(server: SocketAddress, timeoutMs: Int = 5000, maxResponseBytes: Int = 4 << 20) {
        self.server = server
        self.timeoutMs = timeoutMs
        self.maxResponseBytes = maxResponseBytes
    }

    /// Parses `http://HOST:PORT` (a trailing `/` is allowed; other paths and https are not).
    public init(url: String, timeoutMs: Int = 5000) throws(LoadError) {
        guard url.hasPrefix("http://") else { throw LoadError("\(url): expected http://HOST:PORT") }
        var rest = url.dropFirst("http://".count)
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/") else { throw LoadError("\(url): expected http://HOST:PORT without a path") }
        try self.init(server: SocketAddress(hostPort: String(rest)), timeoutMs: timeoutMs)
    }

    /// Sends one request and returns the answer. Throws on a network failure, a timeout or a
    /// malformed answer; an HTTP error status is an answer, not a throw.
    public func request(_ method: String, _ path: String, body: [UInt8] = [], headers: [(String, String)] = []) throws(LoadError) -> HTTPClientResponse {
        let deadline = MonotonicClock.now() + UInt64(timeoutMs) * 1_000_000
        let what = "\(method) http://\(server)\(path)"
        let started: TCPConnect.Started
        do { started = try TCPConnect.start(to: server) } catch {
            let hint = error.call == "connect" ? "; is the relay running there?" : ""
            throw LoadError("\(what): \(error.call): \(errnoText(error.code))\(hint)")
        }
        let fd = started.fd
        defer { SystemCall.close(fd) }
        if !started.connected {
            try wait(fd, for: Int16(POLLOUT), until: deadline, what)
            let soError = TCPConnect.outcome(of: fd)
            guard soError == 0 else { throw LoadError("\(what): connect: \(errnoText(soError)); is the relay running there?") }
        }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(server)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        if !body.isEmpty { head += "Content-Type: application/json\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let request = Array(head.utf8) + body
        var sent = 0
        while sent < request.count {
            let outcome = request.withUnsafeBytes { raw in
                SystemCall.outcome { send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL)) }
            }
            switch outcome {
            case .done(let n): sent += n
            case .wouldBlock: try wait(fd, for: Int16(POLLOUT), until: deadline, what)
            case .failed: throw LoadError("\(what): send: \(errnoText(outcome))")
            }
        }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        reading: while true {
            if let complete = HTTPResponseParser.complete(answer) { return complete }
            let outcome = chunk.withUnsafeMutableBytes { raw in SystemCall.outcome { recv(fd, raw.baseAddress!, raw.count, 0) } }
            switch outcome {
            case .done(0): break reading
            case .done(let n):
                answer += chunk[0..<n]
                guard answer.count <= maxResponseBytes else {
                    throw LoadError("\(what): answer longer than \(maxResponseBytes) bytes")
                }
                continue
            case .wouldBlock:
                try wait(fd, for: Int16(POLLIN), until: deadline, what)
                continue
            case .failed: throw LoadError("\(what): recv: \(errnoText(outcome))")
            }
        }
        guard let response = HTTPResponseParser.parse(answer, atEOF: true) else {
            throw LoadError("\(what): malformed or truncated HTTP answer")
        }
        return response
    }

    private func wait(_ fd: Int32, for events: Int16, until deadline: UInt64, _ what: String) throws(LoadError) {
        while true {
            let now = MonotonicClock.now()
            guard now < deadline else { throw LoadError("\(what): no answer within \(timeoutMs) ms") }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let outcome = SystemCall.outcome { Int(poll(&p, 1, Int32(max(1, (deadline - now) / 1_000_000)))) }
            if case .done(let ready) = outcome, ready > 0 { return }
            if case .failed = outcome { throw LoadError("\(what): poll: \(errnoText(outcome))") }
        }
    }
}

extension StringProtocol {
    /// Trims the given characters from both ends (Foundation-free).
    func trimmed(of set: String) -> String {
        let chars = Set(set)
        var s = Substring(self)
        while let f = s.first, chars.contains(f) { s = s.dropFirst() }
        while let l = s.last, chars.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
