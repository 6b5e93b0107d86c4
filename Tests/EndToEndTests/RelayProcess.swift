import DatagramEngine
import Foundation
import NetAddress
import RelayObservation
import TestPorts
import TestSupport
import Glibc
import XCTest

/// The real mediarelay executable, started for a test and stopped at its end: the shared
/// launcher (`ServerProcess`) with the test's port block, control port and conveniences for the
/// control API and stats.
final class RelayProcess {
    /// The running relay: its pid, log, signals and exit.
    let process: ServerProcess
    let httpPort: UInt16

    /// The directory with the built products (next to the test bundle).
    static var productsDirectory: URL { BuiltProducts.directory }

    /// The relay's `--ports` range, claimed against every other test on the host while the
    /// relay lives (fixed ranges collided with other test runs going on at the same time).
    let ports: PortBlock?

    /// Starts `mediarelay --ports PORTS ARGS --http HTTP` (without `--ports` when `ports` is nil)
    /// and waits for its `http listening on` line. The control API is on 127.0.0.1, port 0 unless a test
    /// needs the control port known at start (the TURN peer policy lists it only then).
    init(ports: PortBlock?, _ arguments: [String], environment: [String: String] = [:], controlPort: UInt16 = 0,
         file: StaticString = #filePath, line: UInt = #line) throws {
        self.ports = ports
        let arguments = ["--http", "127.0.0.1:\(controlPort)", "--log-level", "info"] + (ports.map { ["--ports", $0.argument] } ?? []) + arguments
        // Generous: a loaded 2-core machine may take seconds to start a debug build.
        process = try ServerProcess(path: BuiltProducts.path("mediarelay"), arguments: arguments, environment: environment,
                                    ready: .listening, startTimeoutMs: 20_000)
        guard let port = process.httpPort else { throw RelayError.didNotStart(process.log) }
        httpPort = port
    }

    enum RelayError: Error { case didNotStart(String) }

    /// Runs mediarelay with `arguments` to its exit (SIGKILL after a generous deadline, which
    /// fails the test) and returns the status and what it wrote on stderr: for start-up that
    /// must stop.
    static func runToExit(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> (status: Int32, stderr: String) {
        let process = try ServerProcess(path: BuiltProducts.path("mediarelay"), arguments: arguments, ready: .started)
        let status = process.waitForExit(timeout: 20)
        XCTAssertNotNil(status, "mediarelay \(arguments) did not exit by itself", file: file, line: line)
        return (status ?? process.stop(timeoutMs: 0) ?? 128 + SIGKILL, process.log)
    }

    var log: String { process.log }

    /// SIGTERM, then the exit status (waits at most 20 s; SIGKILL after that).
    @discardableResult
    func stop() -> Int32 {
        process.stop(timeoutMs: 20_000) ?? 128 + SIGKILL
    }

    func request(_ method: String, _ path: String, body: String? = nil, token: String? = nil) throws -> HTTPReply {
        try HTTPReply.send(port: httpPort, method: method, path: path, body: body, token: token)
    }

    /// POST /v1/sessions; returns the session id and its legs' endpoints.
    func createSession(_ json: String = "{}", token: String? = nil) throws -> (id: String, legs: [Endpoint]) {
        let reply = try request("POST", "/v1/sessions", body: json, token: token)
        guard reply.status == 201, let object = reply.json, let id = object["id"] as? String,
              let legs = object["legs"] as? [[String: Any]] else {
            throw HTTPReply.Failure.unexpected("\(reply.status) \(reply.text)")
        }
        return (id, legs.map { Endpoint(host: $0["address"] as! String, port: UInt16($0["port"] as! Int))! })
    }

    /// Polls `GET path` until `condition` holds for its JSON, at most `seconds` (generous: the
    /// relay publishes stats every 100 ms, but a loaded machine may take far longer). Returns the
    /// last JSON either way; the caller asserts on it, so a condition never met fails there.
    @discardableResult
    func waitFor(_ path: String = "/v1/stats", seconds: Double = 20, until condition: ([String: Any]) -> Bool) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(seconds)
        var object = try request("GET", path).json ?? [:]
        while !condition(object) && Date() < deadline {
            usleep(20_000)
            object = try request("GET", path).json ?? [:]
        }
        return object
    }

    /// Waits until leg `leg` of session `id` has latched a peer, so that datagrams sent next
    /// to the other leg have somewhere to go.
    func waitForLatch(session id: String, leg: Int) throws {
        let info = try waitFor("/v1/sessions/\(id)") { object in
            guard let legs = object["legs"] as? [[String: Any]], legs.count > leg else { return false }
            return legs[leg]["latched"] is [String: Any]
        }
        let legs = info["legs"] as? [[String: Any]] ?? []
        XCTAssertTrue(legs.count > leg && legs[leg]["latched"] is [String: Any], "leg \(leg) of \(id) never latched: \(info)")
    }

    /// A number in the stats JSON, at a path of keys ("drops", "unknown_source").
    static func number(_ object: [String: Any], _ keys: String...) -> Int? {
        number(object, keys)
    }

    static func number(_ object: [String: Any], _ keys: [String]) -> Int? {
        var value: Any? = object
        for key in keys { value = (value as? [String: Any])?[key] }
        return value as? Int
    }

    func stats() throws -> [String: Any] {
        let reply = try request("GET", "/v1/stats")
        guard let object = reply.json else { throw HTTPReply.Failure.unexpected(reply.text) }
        return object
    }
}

/// One answer of the relay's HTTP API, through the shared HTTP client (RelayObservation's
/// `HTTPClient`); `exchange` sends raw bytes, for requests a client would never write.
struct HTTPReply {
    let status: Int
    let text: String

    enum Failure: Error { case connect, unexpected(String) }

    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }

    /// `method path` with `body` as JSON and `token` as the bearer token. 30 s: generous,
    /// because the relay's HTTP thread may wait its turn for seconds on a loaded 2-core machine.
    static func send(port: UInt16, method: String, path: String, body: String?, token: String?) throws -> HTTPReply {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        let client = try HTTPClient(url: "http://127.0.0.1:\(port)", timeoutMs: 30_000)
        let response = try client.request(method, path, body: Array((body ?? "").utf8), headers: headers)
        return HTTPReply(status: response.status, text: response.text)
    }

    /// Sends `bytes` and reads until the server closes (or 30 s pass: generous, because the
    /// relay's HTTP thread may wait its turn for seconds on a loaded 2-core machine).
    static func exchange(port: UInt16, bytes: [UInt8]) throws -> [UInt8] {
        guard let fd = try? LoopbackTCP.connect(port: port, configure: { fd in
            var timeout = timeval(tv_sec: 30, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }) else { throw Failure.connect }
        defer { close(fd) }
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            reply += buffer[0..<count]
        }
        return reply
    }
}
