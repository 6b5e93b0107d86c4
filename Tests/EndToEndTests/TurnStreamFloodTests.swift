import ClientSockets
import Foundation
import Glibc
import LoadGen
import STUN
import TLS
import XCTest

/// Issue 18's "bad input and load" through the real executable: a thousand TLS connections
/// that never finish their handshake and a thousand TCP connections that trickle a STUN message
/// a byte at a time, left to the relay's own 10 s deadlines, while UDP TURN and a session
/// relay every datagram, /healthz answers, and the relay's descriptors and memory go back to
/// where they were once the connections are gone.
final class TurnStreamFloodTests: XCTestCase {
    private static let connections = 1000
    private var server: TurnStreamServerFixture?
    private var stalled: [StalledConnectionsFixture] = []

    override func setUpWithError() throws {
        // 2,000 sockets here and as many in the relay (which raises its own limit at start).
        raiseOpenFileLimit()
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try XCTSkipIf(limit.rlim_cur < 2 * UInt64(Self.connections) + 500, "RLIMIT_NOFILE is \(limit.rlim_cur): too few descriptors")
    }

    override func tearDown() {
        for connections in stalled { connections.closeAll() }
        stalled = []
        server = nil
    }

    func testStalledHandshakesAndTricklersAreClosedAtTheirDeadlinesWhileUDPTurnAndASessionRelayEverything() throws {
        let server = try TurnStreamServerFixture(["--turn-max-connections", "5000", "--turn-max-connections-per-source", "5000"])
        self.server = server
        let relay = server.relay
        let pid = relay.process.processIdentifier
        let traffic = try SteadyTrafficHarness(relay: relay, turnPort: server.udpPort)
        var health = HealthRecord()
        let idle = try ProcessFootprint(pid: pid)

        // Half the TLS connections send half a ClientHello, the others nothing at all.
        let opened = Date()
        let handshakes = try StalledConnectionsFixture(count: Self.connections, port: server.tlsPort)
        stalled.append(handshakes)
        handshakes.send(try halfAClientHello(server), on: 0..<(Self.connections / 2))
        let tricklers = try StalledConnectionsFixture(count: Self.connections, port: server.tcpPort)
        stalled.append(tricklers)
        let message = Self.neverCompletedBinding()

        let accepted = try drive(traffic, &health, relay, trickling: tricklers, message) { stats in
            RelayProcess.number(stats, "turn", "transports", "tls", "connections") == Self.connections
                && RelayProcess.number(stats, "turn", "transports", "tcp", "connections") == Self.connections
        }
        XCTAssertTrue(accepted, "the relay did not hold all \(2 * Self.connections) connections at once")
        let peak = try ProcessFootprint(pid: pid)

        // The relay closes each at its deadline (10 s after accepting it); the tricklers trickle on.
        let closed = try drive(traffic, &health, relay, trickling: tricklers, message, seconds: 40) { stats in
            RelayProcess.number(stats, "turn", "transports", "tls", "connections") == 0
                && RelayProcess.number(stats, "turn", "transports", "tcp", "connections") == 0
        }
        let closedAfter = Date().timeIntervalSince(opened)
        XCTAssertTrue(closed, "connections still open after 40 s")
        XCTAssertGreaterThan(closedAfter, 9, "closed before their 10 s deadline")
        XCTAssertEqual(handshakes.waitUntilClosedByRelay(seconds: 10), Self.connections, "TLS connections the relay closed")
        XCTAssertEqual(tricklers.waitUntilClosedByRelay(seconds: 10), Self.connections, "TCP connections the relay closed")
        traffic.settle()
        traffic.assertEverythingRelayed("during the flood")
        XCTAssertGreaterThan(traffic.sentCount, 1000, "the traffic ran during the flood")

        let stats = try relay.stats()
        let tls = { (keys: [String]) in RelayProcess.number(stats, ["turn", "transports", "tls"] + keys) }
        let tcp = { (keys: [String]) in RelayProcess.number(stats, ["turn", "transports", "tcp"] + keys) }
        XCTAssertEqual(tls(["connections_opened"]), Self.connections, "\(stats)")
        XCTAssertEqual(tls(["connections_closed", "handshake_timeout"]), Self.connections, "\(stats)")
        XCTAssertEqual(tls(["handshakes", "failed", "timeout"]), Self.connections, "\(stats)")
        XCTAssertEqual(tls(["handshakes", "completed"]), 0)
        XCTAssertEqual(tcp(["connections_opened"]), Self.connections, "\(stats)")
        XCTAssertEqual(tcp(["connections_closed", "message_timeout"]), Self.connections, "\(stats)")
        XCTAssertTrue(health.everyAnswerWasPrompt, health.summary)
        XCTAssertGreaterThan(health.answers, 10, health.summary)

        // Descriptors and memory back near where they were with no connection open.
        for connections in stalled { connections.closeAll() }
        var after = try ProcessFootprint(pid: pid)
        let settled = eventually(seconds: 20) {
            after = (try? ProcessFootprint(pid: pid)) ?? after
            return after.descriptors <= idle.descriptors + 2 && after.residentKilobytes <= idle.residentKilobytes + Self.memorySlackKilobytes
        }
        print("TurnStreamFloodTests: idle \(idle); with \(2 * Self.connections) connections \(peak); after \(after); "
              + "closed after \(String(format: "%.1f", closedAfter)) s; \(traffic.summary); \(health.summary)")
        XCTAssertTrue(settled, "idle \(idle), with the connections \(peak), after \(after)")
        XCTAssertEqual(relay.stop(), 0, relay.log)
    }

    /// What the relay may keep once the connections are gone: a little its allocator holds on
    /// to (the stream buffers' pages go back to the kernel as each stream is released).
    private static let memorySlackKilobytes = 8 << 10

    /// Ticks the steady traffic every 4 ms, trickles a byte on every connection each 200 ms,
    /// asks /healthz each 500 ms and the stats each 200 ms, until `condition` holds of the stats
    /// or `seconds` pass; whether it held.
    private func drive(_ traffic: SteadyTrafficHarness, _ health: inout HealthRecord, _ relay: RelayProcess,
                       trickling tricklers: StalledConnectionsFixture, _ message: [UInt8], seconds: Double = 30,
                       until condition: ([String: Any]) -> Bool) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var nextTrickle = Date()
        var nextHealth = Date()
        var nextStats = Date()
        while Date() < deadline {
            try traffic.tick()
            let now = Date()
            if now >= nextTrickle {
                tricklers.trickle(message)
                nextTrickle = now.addingTimeInterval(0.2)
            }
            if now >= nextHealth {
                try health.ask(relay)
                nextHealth = Date().addingTimeInterval(0.5)
            }
            if now >= nextStats {
                if condition(try relay.stats()) { return true }
                nextStats = Date().addingTimeInterval(0.2)
            }
            usleep(4_000)
        }
        return false
    }

    /// A Binding request whose header announces 512 bytes of attributes: a byte each 200 ms
    /// is 50 bytes by the first-message deadline, so it never completes.
    private static func neverCompletedBinding() -> [UInt8] {
        var header = MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes
        header[2] = 0x02
        header[3] = 0x00
        return header + [UInt8](repeating: 0, count: 512)
    }

    /// The first half of a real ClientHello for the relay's name.
    private func halfAClientHello(_ server: TurnStreamServerFixture) throws -> [UInt8] {
        let session = try TLSSession(client: try server.clientContext(), serverName: "localhost")
        XCTAssertEqual(session.handshake(), .inProgress)
        var hello = [UInt8](repeating: 0, count: 4096)
        let count = hello.withUnsafeMutableBytes { session.takeCiphertext(into: $0) }
        XCTAssertGreaterThan(count, 100, "a ClientHello")
        return Array(hello[0..<(count / 2)])
    }
}

/// /healthz asked again and again while a test loads the relay: every answer must be 200 and
/// come within a second.
private struct HealthRecord {
    private(set) var answers = 0
    private(set) var failures: [String] = []
    private(set) var slowest: TimeInterval = 0

    mutating func ask(_ relay: RelayProcess) throws {
        let started = Date()
        let reply = try relay.request("GET", "/healthz")
        let took = Date().timeIntervalSince(started)
        slowest = max(slowest, took)
        answers += 1
        if reply.status != 200 || took > 1 { failures.append("\(reply.status) after \(String(format: "%.3f", took)) s") }
    }

    var everyAnswerWasPrompt: Bool { failures.isEmpty }

    var summary: String {
        "/healthz \(answers) answers, slowest \(String(format: "%.3f", slowest)) s" + (failures.isEmpty ? "" : ", failures: \(failures)")
    }
}
