import DatagramEngine
import Foundation
import Glibc
import LoadGen
import NetAddress
import STUN
import TestPorts
import TestSupport
import XCTest

/// The accounting log through the real executable: known traffic with known ECN codepoints
/// through a TURN allocation (over UDP, TCP and TLS), a session and a forward-rule client;
/// each ended (deleted, connection closed, idle, shutdown) and its line checked field by field
/// in both `--log-format`s, and a SIGHUP that switches the format.
final class AccountingLogTests: XCTestCase {
    /// Field checks common to every line: the start lies between `before` and now, and the
    /// duration is no longer than that.
    private func assertTimes(_ line: [String: String], since before: Date, file: StaticString = #filePath, line number: UInt = #line) {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let start = line["start"].flatMap(formatter.date(from:)), line["start"]?.hasSuffix("Z") == true else {
            return XCTFail("start is not RFC 3339 UTC: \(line["start"] ?? "none")", file: file, line: number)
        }
        XCTAssertGreaterThanOrEqual(start.timeIntervalSince(before), -0.001, "start \(start) before the test began", file: file, line: number)
        XCTAssertLessThanOrEqual(start.timeIntervalSinceNow, 0, "start in the future", file: file, line: number)
        let duration = Double(line["duration_ms"] ?? "") ?? -1
        XCTAssertGreaterThanOrEqual(duration, 0, file: file, line: number)
        XCTAssertLessThanOrEqual(duration, Date().timeIntervalSince(before) * 1000 + 1, file: file, line: number)
    }

    private func assertFields(_ line: [String: String]?, _ expected: [String: String], _ label: String,
                              file: StaticString = #filePath, line number: UInt = #line) {
        guard let line else { return XCTFail("\(label): no accounting line", file: file, line: number) }
        for (key, value) in expected.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(line[key], value, "\(label): \(key) in \(line)", file: file, line: number)
        }
    }

    func testTurnAllocationOverUDPDeletedAndAtShutdownInBothFormats() throws {
        for format in ["text", "json"] {
            let before = Date()
            let fixture = try TurnServerFixture(hosts: ["127.0.0.1"], ["--log-format", format])
            defer { XCTAssertEqual(fixture.relay.stop(), 0) }
            let allocation = try fixture.allocate(on: "127.0.0.1")
            // Client to peers: Not-ECT, ECT(1) x3, ECT(0) x2 (one with DSCP AF41), CE; 4-byte payloads.
            let upChannel: [UInt8] = [0x00, 0x01, 0x02, 34 << 2 | 2, 0x03]
            let upSend: [UInt8] = [0x01, 0x01]
            XCTAssertEqual(try allocation.relay(upChannel, along: .channelDataToPeer), upChannel)
            XCTAssertEqual(try allocation.relay(upSend, along: .sendIndicationToPeer), upSend)
            // A peer without a permission (another address): dropped, counted for this allocation.
            let stranger = try IndependentPeer(host: "127.0.0.2")
            try stranger.send([1, 2, 3, 4], tos: 2, to: allocation.relayed)
            // Peers to the client: ECT(0) x3, ECT(1), CE.
            let downChannel: [UInt8] = [0x02, 0x02, 0x02, 0x01]
            let downData: [UInt8] = [0x03]
            XCTAssertEqual(try allocation.relay(downChannel, along: .channelDataToClient), downChannel)
            XCTAssertEqual(try allocation.relay(downData, along: .dataIndicationToClient), downData)
            let kept = try fixture.allocate(on: "127.0.0.1")
            try fixture.delete(allocation)
            let clientAddress = "127.0.0.1:\(allocation.client.port)"
            let deleted = LogLines.wait(fixture.relay, message: "accounting") { $0["client"] == clientAddress }
            assertFields(deleted, [
                "level": "info", "kind": "allocation", "user": "alice", "transport": "udp", "reason": "deleted",
                "client": clientAddress, "peers_local": allocation.relayed.description,
                "client_packets_in": "7", "client_bytes_in": "28", "client_ecn_in": "1,3,2,1",
                "client_packets_out": "5", "client_bytes_out": "20", "client_ecn_out": "0,1,3,1",
                "peers_packets_in": "5", "peers_bytes_in": "20", "peers_ecn_in": "0,1,3,1",
                "peers_packets_out": "7", "peers_bytes_out": "28", "peers_ecn_out": "1,3,2,1",
                "ce_marked": "0", "drops": "no_permission:1",
            ], "\(format): the deleted allocation")
            if let deleted { assertTimes(deleted, since: before) }
            XCTAssertNil(deleted?["client_local"], "a TURN client's side names no relay address of its own")
            // The other allocation is alive when the relay stops: its line says shutdown.
            kill(fixture.relay.process.processIdentifier, SIGTERM)
            let atShutdown = LogLines.wait(fixture.relay, message: "accounting") { $0["client"] == "127.0.0.1:\(kept.client.port)" }
            assertFields(atShutdown, ["kind": "allocation", "reason": "shutdown", "client_packets_in": "0", "drops": ""],
                         "\(format): the allocation alive at shutdown")
            if format == "json" {
                let lines = fixture.relay.log.split(separator: "\n")
                XCTAssertTrue(lines.allSatisfy { $0.hasPrefix("{\"time\":") }, "a line that is not JSON: \(fixture.relay.log)")
            }
        }
    }

    func testTurnAllocationOverTCPAndTLSEndsWithItsConnection() throws {
        let server = try TurnStreamServerFixture(["--log-format", "json"])
        for tls in [false, true] {
            let transport = tls ? "tls" : "tcp"
            let before = Date()
            let peer = try Peers(count: 1)
            let client = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: tls ? server.tlsPort : server.tcpPort)!,
                                              tls: tls ? server.clientContext() : nil)
            let relayed = try client.allocate(channel: 0x4000, to: peer.address(0))
            for index in 0..<3 { client.write(paddedChannelData(0x4000, [UInt8(index), 1, 2, 3, 4, 5])) }
            XCTAssertEqual(peer.collect(expected: 3).map(\.trafficClass.ecn), [.notECT, .notECT, .notECT],
                           "a stream's messages leave Not-ECT")
            peer.send(from: 0, to: relayed, batch: [([9, 9], TrafficClass(dscp: 0, ecn: .ect0)), ([9, 9], TrafficClass(dscp: 0, ecn: .ce))])
            var relayedToClient = 0
            while relayedToClient < 2, let message = client.readMessage(), message.first.map({ $0 & 0xC0 == 0x40 }) == true {
                relayedToClient += 1
            }
            XCTAssertEqual(relayedToClient, 2, "\(transport): ChannelData to the client")
            shutdown(client.descriptor, Int32(SHUT_RDWR))
            let line = LogLines.wait(server.relay, message: "accounting") { $0["transport"] == transport }
            assertFields(line, [
                "kind": "allocation", "user": "alice", "reason": "connection_closed", "peers_local": relayed.description,
                "client_packets_in": "3", "client_bytes_in": "18", "client_ecn_in": "3,0,0,0",
                "client_packets_out": "2", "client_bytes_out": "4", "client_ecn_out": "2,0,0,0",
                "peers_ecn_in": "0,0,1,1", "peers_ecn_out": "3,0,0,0", "ce_marked": "0", "drops": "",
            ], "\(transport) allocation")
            if let line { assertTimes(line, since: before) }
        }
    }

    /// A REST user name is the client's choice: spaces, quotes, `=` and a line break in it
    /// neither break the text line nor forge a field, and it reads back whole.
    func testAClientChosenUserNameIsEscaped() throws {
        let secret = "accounting-secret"
        let server = try TurnStreamServerFixture(["--turn-secret", secret])
        let username = "\(UInt64(time(nil)) + 3600):eve \"x\" kind=session\nmediarelay[info] accounting reason=forged"
        let password = LongTermKey.restPassword(secret: Array(secret.utf8), username: username)
        let client = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: server.tcpPort)!, username: username, password: password)
        let peer = try Peers(count: 1)
        _ = try client.allocate(channel: 0x4000, to: peer.address(0))
        shutdown(client.descriptor, Int32(SHUT_RDWR))
        let line = LogLines.wait(server.relay, message: "accounting") { $0["kind"] == "allocation" }
        assertFields(line, ["user": username, "reason": "connection_closed", "transport": "tcp"], "escaped user name")
        let lines = server.relay.log.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.contains("accounting") }.count, 1, server.relay.log)
        XCTAssertFalse(lines.contains { $0.hasPrefix("mediarelay[info] accounting reason=forged") }, server.relay.log)
    }

    /// A session ended by DELETE, as text; then SIGHUP switches the config file's log_format
    /// to json, and the next session's line (and the reload's own) is JSON.
    func testSessionLinesAndASighupThatSwitchesTheFormat() throws {
        let config = try ConfigFixture(self, #"{"log_format": "text"}"#)
        let relay = try RelayProcess(ports: PortBlock(count: 100), ["--config", config.path])
        defer { XCTAssertEqual(relay.stop(), 0) }
        try checkSession(relay, "text")
        XCTAssertTrue(relay.log.contains("mediarelay[info] accounting kind=session"), relay.log)
        try config.write(#"{"log_format": "json"}"#)
        kill(relay.process.processIdentifier, SIGHUP)
        XCTAssertTrue(eventually { relay.log.contains(#""level":"info","msg":"SIGHUP: reloaded "#) },
                      "the reload's line is JSON already: \(relay.log)")
        try checkSession(relay, "json")
    }

    private func checkSession(_ relay: RelayProcess, _ format: String) throws {
        let before = Date()
        let (id, legs) = try relay.createSession()
        let peers = try Peers(count: 2)
        // Leg 1 latches first, with nowhere to send yet: counted in, dropped (no_destination).
        peers.send(from: 1, to: legs[1], [7, 7, 7])
        try relay.waitForLatch(session: id, leg: 1)
        let marks: [ECN] = [.ect0, .ect0, .ect1, .ce, .notECT]
        peers.send(from: 0, to: legs[0], batch: marks.map { ([1, 2, 3, 4, 5, 6], TrafficClass(dscp: 10, ecn: $0)) })
        XCTAssertEqual(peers.collect(expected: marks.count) { $0.peer == 1 }.filter { $0.peer == 1 }.map(\.trafficClass.ecn), marks)
        XCTAssertEqual(try relay.request("DELETE", "/v1/sessions/\(id)").status, 204)
        let line = LogLines.wait(relay, message: "accounting") { $0["session"] == id }
        assertFields(line, [
            "kind": "session", "transport": "udp", "reason": "deleted",
            "leg0": peers.address(0).description, "leg0_local": legs[0].description,
            "leg0_packets_in": "5", "leg0_bytes_in": "30", "leg0_ecn_in": "1,1,2,1",
            "leg0_packets_out": "0", "leg0_bytes_out": "0", "leg0_ecn_out": "0,0,0,0",
            "leg1": peers.address(1).description, "leg1_local": legs[1].description,
            "leg1_packets_in": "1", "leg1_bytes_in": "3", "leg1_ecn_in": "1,0,0,0",
            "leg1_packets_out": "5", "leg1_bytes_out": "30", "leg1_ecn_out": "1,1,2,1",
            "ce_marked": "0", "drops": "no_destination:1",
        ], "\(format) session")
        if let line { assertTimes(line, since: before) }
    }

    /// A leg's rate limit far exceeded by ECT(1): the relay marks some CE before it drops the
    /// rest. Which ones is the policer's business; the line must agree with what arrived. The
    /// session then ends idle.
    func testCEMarkedByTheRelayAndRateLimitDropsMatchWhatArrived() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 100), ["--log-format", "json"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let (id, legs) = try relay.createSession(#"{"max_packets_per_second": 10, "idle_timeout_seconds": 1}"#)
        let peers = try Peers(count: 2)
        peers.send(from: 1, to: legs[1], [7])
        try relay.waitForLatch(session: id, leg: 1)
        let sent = 60
        peers.send(from: 0, to: legs[0], batch: Array(repeating: ([1, 2, 3, 4], TrafficClass(dscp: 0, ecn: .ect1)), count: sent))
        let arrived = peers.collect(expected: sent, seconds: 2) { $0.peer == 1 }.filter { $0.peer == 1 }
        let marked = arrived.filter { $0.trafficClass.ecn == .ce }.count
        XCTAssertGreaterThan(marked, 0, "the limit marked nothing: \(arrived.map(\.trafficClass.ecn))")
        XCTAssertLessThan(arrived.count, sent, "the limit dropped nothing")
        // Ended by its idle timeout (1 s), with nobody asking.
        assertFields(LogLines.wait(relay, message: "accounting") { $0["session"] == id }, [
            "reason": "idle", "leg0_packets_in": "\(arrived.count)", "leg0_ecn_in": "0,\(arrived.count),0,0",
            "leg1_packets_out": "\(arrived.count)", "leg1_ecn_out": "0,\(arrived.count - marked),0,\(marked)",
            "ce_marked": "\(marked)", "drops": "no_destination:1,rate_limit:\(sent - arrived.count)",
        ], "rate-limited session")
    }

    func testForwardClientLineAfterItsIdleTimeoutInBothFormats() throws {
        for format in ["text", "json"] {
            let before = Date()
            let upstream = try Peers(count: 1)
            let listen = try FreePort.udp()
            let relay = try RelayProcess(ports: PortBlock(count: 100), ["--log-format", format, "--idle-timeout", "1",
                                                                          "--forward", "127.0.0.1:\(listen)=\(upstream.address(0))"])
            defer { XCTAssertEqual(relay.stop(), 0) }
            let rule = Endpoint(host: "127.0.0.1", port: listen)!
            let client = try Peers(count: 1)
            let up: [ECN] = [.ect1, .ect1, .ce, .notECT, .ect0]
            client.send(from: 0, to: rule, batch: up.map { ([1, 2, 3, 4, 5, 6, 7], TrafficClass(dscp: 46, ecn: $0)) })
            let atUpstream = upstream.collect(expected: up.count)
            XCTAssertEqual(atUpstream.map(\.trafficClass.ecn), up)
            let clientPort = try XCTUnwrap(atUpstream.first?.source.port)
            // A stranger writing to the client's upstream socket: dropped, counted for the client.
            let stranger = try Peers(count: 1)
            stranger.send(from: 0, to: Endpoint(host: "127.0.0.1", port: clientPort)!, [66])
            let down: [ECN] = [.ect0, .ce]
            upstream.send(from: 0, to: Endpoint(host: "127.0.0.1", port: clientPort)!,
                          batch: down.map { ([8, 9, 10], TrafficClass(dscp: 0, ecn: $0)) })
            XCTAssertEqual(client.collect(expected: down.count).map(\.trafficClass.ecn), down)
            let line = LogLines.wait(relay, message: "accounting") { $0["kind"] == "forward_client" }
            assertFields(line, [
                "rule": rule.description, "transport": "udp", "reason": "idle",
                "client": client.address(0).description, "client_local": rule.description,
                "client_packets_in": "5", "client_bytes_in": "35", "client_ecn_in": "1,2,1,1",
                "client_packets_out": "2", "client_bytes_out": "6", "client_ecn_out": "0,0,1,1",
                "upstream": upstream.address(0).description, "upstream_local": "0.0.0.0:\(clientPort)",
                "upstream_packets_in": "2", "upstream_bytes_in": "6", "upstream_ecn_in": "0,0,1,1",
                "upstream_packets_out": "5", "upstream_bytes_out": "35", "upstream_ecn_out": "1,2,1,1",
                "ce_marked": "0", "drops": "unknown_source:1",
            ], "\(format) forward client")
            if let line { assertTimes(line, since: before) }
        }
    }
}
