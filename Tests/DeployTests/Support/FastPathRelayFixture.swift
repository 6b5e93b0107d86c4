import Foundation
import RelayObservation
import TestSupport
import XCTest

/// The built relay run inside a network namespace of its own (so its fast path attaches to
/// nothing of the host), with helpers to read its stats and metrics from inside, and to find
/// the tcx links it holds. Needs root (namespaces, BPF); the namespace goes with `remove()`.
final class FastPathRelayFixture {
    let namespace: NetworkNamespace
    private(set) var server: ServerProcess?
    private(set) var httpPort: UInt16 = 0

    /// One tcx link the relay holds, as its descriptor's /proc fdinfo tells it.
    struct Link: Equatable {
        let linkID: Int
        let programID: Int
        let interfaceIndex: Int
    }

    init(_ tag: String) throws {
        try HostRequirement.require(getuid() == 0, "the fast path start-up tests need root (namespaces, BPF)")
        namespace = try NetworkNamespace("fpx-\(tag)-\(getpid())")
    }

    /// Starts the relay under `prefix` (a capability drop, say) with `arguments` and its HTTP on
    /// the namespace's loopback; returns once it says where it listens.
    func start(_ arguments: [String], prefix: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws {
        let binary = try XCTUnwrap(BuiltProducts.relay, "no mediarelay executable; run `swift build` first", file: file, line: line)
        let server = try ServerProcess(path: binary.path, arguments: ["--http", "127.0.0.1:0", "--workers", "1", "--engine", "mmsg"] + arguments,
                                       prefix: ["ip", "netns", "exec", namespace.name] + prefix, ready: .listening,
                                       startTimeoutMs: 30_000)
        self.server = server
        let listening = try XCTUnwrap(server.listening, "no listening line; log: \(server.log)", file: file, line: line)
        httpPort = try XCTUnwrap(listening.split(separator: ":").last.flatMap { UInt16($0) }, listening, file: file, line: line)
    }

    /// GET `path` from inside the namespace.
    func get(_ path: String) throws -> (status: Int, body: String) {
        let port = httpPort
        let answer = try namespace.inside { httpGet(port: port, path: path) }
        return try XCTUnwrap(answer, "GET \(path) got no answer; log: \(server?.log ?? "")")
    }

    /// /v1/stats' `fast_path` object.
    func fastPathStats() throws -> [String: Any] {
        let response = try get("/v1/stats")
        XCTAssertEqual(response.status, 200)
        let object = try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any]
        return try XCTUnwrap(object?["fast_path"] as? [String: Any], "no fast_path in /v1/stats: \(response.body)")
    }

    /// The log's lines that mention the fast path.
    var fastPathLines: [String] { (server?.log ?? "").split(separator: "\n").map(String.init).filter { $0.contains("fast path") } }

    /// The tcx links among the relay's descriptors.
    func links() throws -> [Link] {
        let pid = try XCTUnwrap(server?.pid)
        let directory = "/proc/\(pid)/fdinfo"
        var found: [Link] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            guard let text = try? String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8), text.contains("link_type:\ttcx") else { continue }
            var fields: [String: Int] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, let value = Int(parts[1].trimmingCharacters(in: .whitespaces).prefix { $0.isNumber }) {
                    fields[String(parts[0])] = value
                }
            }
            found.append(Link(linkID: fields["link_id"] ?? -1, programID: fields["prog_id"] ?? -1, interfaceIndex: fields["ifindex"] ?? -1))
        }
        return found
    }

    /// Sends `signal`, waits for the relay's exit with `exitStatus`, and checks that `link` and
    /// its program are gone from the kernel.
    func expectGone(_ link: Link, after signal: Int32, exitStatus: Int32, file: StaticString = #filePath, line: UInt = #line) throws {
        let server = try XCTUnwrap(server, file: file, line: line)
        server.signal(signal)
        XCTAssertEqual(server.waitForExit(timeout: 10), exitStatus, server.log, file: file, line: line)
        XCTAssertFalse(try Self.stillExists("link", id: link.linkID), "the tcx link outlived the relay (signal \(signal))", file: file, line: line)
        XCTAssertFalse(try Self.stillExists("prog", id: link.programID), "the program outlived the relay (signal \(signal))", file: file, line: line)
    }

    /// Whether the kernel still has the BPF link or program with this id (bpftool answers 0
    /// only for one that exists). The kernel frees them shortly after the last descriptor
    /// goes, so this waits up to 5 s for them to go.
    static func stillExists(_ kind: String, id: Int) throws -> Bool {
        try HostRequirement.requireTools(["/usr/sbin/bpftool"])
        let deadline = Date().addingTimeInterval(5)
        repeat {
            if try Command.run(["bpftool", kind, "show", "id", String(id)]).status != 0 { return false }
            usleep(50_000)
        } while Date() < deadline
        return true
    }

    func remove() {
        server?.stop()
        namespace.remove()
    }
}
