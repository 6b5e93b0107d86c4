import DatagramEngine
import Foundation
import NetAddress
import TestPorts
import XCTest

/// The mediarelay executable as a TURN server for coturn's own client: static users and the
/// REST secret in one process, channels, Send indications, client to client, an IPv6 relay,
/// ten clients at once; then the TURN figures in /v1/stats and the allocation listing.
final class TurnServerTests: XCTestCase {
    func testCoturnClientThroughMediarelay() throws {
        try Coturn.requireTools()
        let turnPort = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(), [
            "--relay-address", "127.0.0.1", "--turn", "127.0.0.1:\(turnPort)",
            "--turn-realm", "north.gov", "--turn-user", "alice:secret", "--turn-secret", "logen",
            "--turn-allowed-peer", "127.0.0.1/32", "--turn-allowed-peer", "::1/128",
        ])
        defer { relay.stop() }
        XCTAssertTrue(relay.log.contains("TURN on udp 127.0.0.1:\(turnPort)"), relay.log)
        let peer = try TURNEchoPeer()
        defer { peer.stop() }
        let peer6 = try TURNEchoPeer(address: "::1")
        defer { peer6.stop() }
        let server = Endpoint(host: "127.0.0.1", port: turnPort)!
        let common = ["-n", "10", "-m", "2", "-z", "5", "-l", "160"]
        let user = ["-u", "alice", "-w", "secret"]
        let runs = try TURNClientRun.runTogether(server: server, peer: peer.endpoint, flagSets: [
            user + common,
            user + common + ["-s"],
            user + common + ["-y"],
            ["-u", "carol", "-W", "logen"] + common,
            user + ["-n", "10", "-m", "10", "-z", "5", "-l", "160"],
        ])
        for (index, run) in runs.enumerated() { XCTAssertTrue(run.passed, "run \(index): \(run.summary)\n\(relay.log)") }
        let ipv6 = try TURNClientRun.run(server: server, peer: peer6.endpoint, flags: user + common + ["-x"])
        XCTAssertTrue(ipv6.passed, "IPv6 relay: \(ipv6.summary)\n\(relay.log)")

        // Wrong credentials relay nothing.
        let wrong = try TURNClientRun.run(server: server, peer: peer.endpoint, flags: ["-u", "alice", "-w", "nope"] + common)
        XCTAssertFalse(wrong.passed, wrong.summary)

        // Stats are published ten times a second: wait for the figures rather than sleep.
        var turn: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(10)
        repeat {
            turn = try relay.stats()["turn"] as? [String: Any] ?? [:]
            let badIntegrity = (turn["auth_failures"] as? [String: Any])?["bad_integrity"] as? Int ?? 0
            if (turn["allocations_created"] as? Int ?? 0) >= 18 && badIntegrity > 0 { break }
            usleep(50_000)
        } while Date() < deadline
        XCTAssertGreaterThanOrEqual(turn["allocations_created"] as? Int ?? 0, 18, "\(turn)")
        XCTAssertGreaterThan(turn["channel_data_to_peers"] as? Int ?? 0, 0)
        XCTAssertGreaterThan(turn["indications_to_peers"] as? Int ?? 0, 0)
        XCTAssertGreaterThan((turn["auth_failures"] as? [String: Any])?["bad_integrity"] as? Int ?? 0, 0)
        let listing = try relay.request("GET", "/v1/turn/allocations?limit=5")
        XCTAssertEqual(listing.status, 200, listing.text)
        XCTAssertNotNil(listing.json?["allocations"] as? [Any])
    }
}
