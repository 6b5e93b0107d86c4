import DatagramEngine
import Foundation
import Glibc
import NetAddress
import TestPorts
import XCTest

/// SIGHUP re-reads the config file: it used to end the relay at once (exit 129, no drain).
final class ReloadTests: XCTestCase {
    func testSighupAppliesANewTokenAndLimitsWithoutDroppingASessionOrADatagram() throws {
        let config = try ConfigFixture(self, #"{"control_token": "first-token", "workers": 1, "max_sessions": 50}"#)
        let relay = try RelayProcess(ports: PortBlock(count: 100), ["--config", config.path])
        let pid = relay.process.processIdentifier
        let session = try relay.createSession(token: "first-token")
        let peers = try Peers(count: 2)
        peers.send(from: 1, to: session.legs[1], [0])
        peers.send(from: 0, to: session.legs[0], [0])
        XCTAssertEqual(peers.collect(expected: 1).count, 1)

        try config.write(#"{"control_token": "second-token", "workers": 2, "max_sessions": 1}"#)
        kill(pid, SIGHUP)
        // Datagrams keep flowing while the relay reloads: every one must arrive.
        var sent = 0
        repeat {
            peers.send(from: 0, to: session.legs[0], [UInt8(truncatingIfNeeded: sent)])
            sent += 1
            usleep(5_000)
        } while !relay.log.contains("SIGHUP: reloaded") && sent < 2000
        XCTAssertTrue(relay.process.isRunning, "SIGHUP ended the relay: \(relay.log)")
        XCTAssertEqual(peers.collect(expected: sent, seconds: 10).count, sent, "datagrams were lost across the reload")

        let line = try XCTUnwrap(relay.log.split(separator: "\n").first { $0.contains("SIGHUP: reloaded") })
        XCTAssertTrue(line.contains("control_token (changed)"), String(line))
        XCTAssertTrue(line.contains("max_sessions 50 -> 1"), String(line))
        XCTAssertTrue(line.contains("needs a restart to take effect: workers (running 1)"), String(line))
        XCTAssertFalse(relay.log.contains("second-token"), "the token was logged")

        XCTAssertEqual(try relay.request("GET", "/v1/sessions", token: "first-token").status, 401)
        let listed = try relay.request("GET", "/v1/sessions", token: "second-token")
        XCTAssertEqual(listed.status, 200)
        XCTAssertTrue(listed.text.contains(session.id), "the session survived the reload: \(listed.text)")
        XCTAssertEqual(try relay.request("POST", "/v1/sessions", body: "{}", token: "second-token").status, 503,
                       "the new cap of one session applies")

        // A file that does not parse changes nothing and says why.
        try config.write(#"{"control_token": "third-token", "#)
        kill(pid, SIGHUP)
        XCTAssertTrue(eventually { relay.log.contains("SIGHUP: keeping the running config") }, relay.log)
        XCTAssertTrue(relay.log.contains("not valid JSON"), relay.log)
        XCTAssertEqual(try relay.request("GET", "/v1/sessions", token: "second-token").status, 200)
        XCTAssertEqual(relay.stop(), 0)
    }

    /// Forward rules' client cap is one of the limits a reload changes for the running rules.
    func testSighupRaisesTheForwardClientCap() throws {
        let config = try ConfigFixture(self, #"{"max_clients": 1}"#)
        let peers = try Peers(count: 3)     // 0: the upstream, 1 and 2: clients
        let listen = Endpoint(host: "127.0.0.1", port: try FreePort.udp())!
        let relay = try RelayProcess(ports: PortBlock(count: 10), ["--config", config.path, "--forward", "\(listen)=\(peers.address(0))"])
        peers.send(from: 1, to: listen, [1])
        XCTAssertEqual(peers.collect(expected: 1).map(\.bytes), [[1]])
        peers.send(from: 2, to: listen, [2])
        // Once the relay has counted it as over the cap, anything it forwarded would be waiting.
        let refused = try relay.waitFor { RelayProcess.number($0, "drops", "client_cap") ?? 0 >= 1 }
        XCTAssertEqual(RelayProcess.number(refused, "drops", "client_cap"), 1, "a second client is over the cap of one")
        XCTAssertEqual(peers.pending().map(\.bytes), [], "nothing of the second client reached the upstream")

        try config.write(#"{"max_clients": 2}"#)
        kill(relay.process.processIdentifier, SIGHUP)
        XCTAssertTrue(eventually { relay.log.contains("SIGHUP: reloaded") }, relay.log)
        XCTAssertTrue(relay.log.contains("max_clients 1 -> 2"), relay.log)
        peers.send(from: 2, to: listen, [3])
        XCTAssertEqual(peers.collect(expected: 1).map(\.bytes), [[3]], "admitted under the raised cap")
        XCTAssertEqual(relay.stop(), 0)
    }

    func testSighupWithoutAConfigFileKeepsRunning() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 10), [])
        kill(relay.process.processIdentifier, SIGHUP)
        XCTAssertTrue(eventually { relay.log.contains("no file to reload") }, relay.log)
        XCTAssertTrue(relay.process.isRunning)
        XCTAssertEqual(try relay.request("GET", "/healthz").status, 200)
        XCTAssertEqual(relay.stop(), 0)
    }
}
