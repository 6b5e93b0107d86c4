import Foundation
import Glibc
@testable import LoadGen
@testable import TurnClientKit
import NetAddress
import STUN
import TestSupport
import XCTest

/// Three relays as one TURN service (issue 19): a full relay sends new clients — coturn's
/// uclient and the load generator — to its siblings, where every byte is relayed, and says
/// so on /readyz while /healthz stays 200; a draining relay keeps relaying for its existing
/// allocations and sends new clients on; two clients on different relays reach each other
/// through their relayed addresses.
final class FleetTests: XCTestCase {
    func testAFullRelayAndADrainingOneSendNewClientsToTheirSiblings() throws {
        try Coturn.requireTools()
        let cap = 2
        let fleet = try FleetFixture(extra: [["--turn-max-allocations", "\(cap)"], ["--drain-seconds", "4"], []])
        defer { fleet.stop() }
        let (first, second) = (fleet.members[0], fleet.members[1])

        // Fill the first relay to its cap.
        let residents = try (0..<cap).map { _ in try fleet.client(of: 0) }
        for resident in residents {
            XCTAssertEqual(resident.allocate()?.messageClass, .successResponse)
            XCTAssertFalse(resident.turn.redirected)
        }
        let ready = try first.relay.waitFor("/readyz") { $0["reason"] as? String == "capacity" }
        XCTAssertEqual(ready["full"] as? [String], ["allocations"], "\(ready)")
        XCTAssertEqual(try first.relay.request("GET", "/readyz").status, 503)
        XCTAssertEqual(try first.relay.request("GET", "/healthz").status, 200, "full is not dead")
        XCTAssertEqual(try second.relay.request("GET", "/readyz").status, 200)

        // coturn's client follows the 300 of its first (probe) Allocate, checking its integrity.
        let peer = try TURNEchoPeer()
        defer { peer.stop() }
        let uclient = try TURNClientRun.run(server: first.turn, peer: peer.endpoint,
                                            flags: ["-u", "fleet", "-W", FleetFixture.secret, "-n", "10", "-m", "2", "-z", "5", "-l", "160"])
        XCTAssertTrue(uclient.passed, uclient.summary)

        // The load generator follows it too, and every datagram comes back both ways.
        let load = try LoadGeneratorTests.runLoad([
            "--turn", "\(first.turn)", "--turn-secret", FleetFixture.secret, "--streams", "2", "--rate", "200",
            "--seconds", "0.5", "--warmup", "0", "--bidirectional", "--drain", "5",
        ])
        XCTAssertEqual(load["turn_redirected"] as? Int, 2)
        let sent = try XCTUnwrap(load["sent"] as? Int)
        XCTAssertGreaterThan(sent, 0)
        XCTAssertEqual(load["received"] as? Int, sent, "every datagram, both ways, through the siblings")
        let redirects = try first.relay.waitFor { RelayProcess.number($0, "turn", "redirects", "capacity") ?? 0 >= 3 }
        XCTAssertEqual(RelayProcess.number(redirects, "turn", "redirects", "capacity"), 3, "uclient's probe and two load clients")
        XCTAssertEqual(RelayProcess.number(redirects, "turn", "allocations"), cap, "none over the cap")
        let metrics = try first.relay.request("GET", "/metrics").text
        XCTAssertTrue(metrics.contains(#"mediarelay_capacity_in_use{resource="allocations"} 2"#), metrics)
        XCTAssertTrue(metrics.contains(#"mediarelay_turn_redirects_total{worker="0",reason="capacity"} 3"#), metrics)

        // Two clients on different relays reach each other through their relayed addresses:
        // one sent on by the full relay, one placed directly on the other sibling.
        let moved = try fleet.client(of: 0)
        XCTAssertEqual(moved.allocate()?.messageClass, .successResponse)
        let movedTo = try XCTUnwrap(fleet.index(of: moved.server))
        XCTAssertNotEqual(movedTo, 0)
        let placed = try fleet.client(of: movedTo == 1 ? 2 : 1)
        XCTAssertEqual(placed.allocate()?.messageClass, .successResponse)
        let (movedRelayed, placedRelayed) = (try XCTUnwrap(moved.relayed), try XCTUnwrap(placed.relayed))
        XCTAssertTrue(moved.bind(0x4000, to: placedRelayed))
        XCTAssertTrue(placed.bind(0x4001, to: movedRelayed))
        func exchange(_ tag: UInt8) {
            moved.send(channel: 0x4000, [tag, 1])
            placed.send(channel: 0x4001, [tag, 2])
            XCTAssertEqual(placed.receiveChannelData(expected: 1), [[tag, 1]], "across relays, one way")
            XCTAssertEqual(moved.receiveChannelData(expected: 1), [[tag, 2]], "and back")
        }
        exchange(1)

        // SIGTERM the second: /readyz says draining, the allocation on it (one of the two
        // above) keeps relaying, and a new client is sent to the third.
        kill(second.relay.process.processIdentifier, SIGTERM)
        let draining = try second.relay.waitFor("/readyz") { $0["reason"] as? String == "draining" }
        XCTAssertEqual(draining["ready"] as? Bool, false, "\(draining)")
        exchange(2)
        let late = try fleet.client(of: 1)
        XCTAssertEqual(late.allocate()?.messageClass, .successResponse)
        XCTAssertEqual(fleet.index(of: late.server), 2, "the draining relay names the third first")
        let latePeer = try IndependentPeer(host: "127.0.0.1")
        XCTAssertTrue(late.bind(0x4000, to: Endpoint(host: "127.0.0.1", port: latePeer.port)!))
        late.send(channel: 0x4000, [9])
        XCTAssertEqual(latePeer.receive(expected: 1).map(\.bytes), [[9]])
        // Stats are the workers' snapshots, published every 100 ms: wait for the redirect's.
        let drained = try second.relay.waitFor { RelayProcess.number($0, "turn", "redirects", "draining") == 1 }
        XCTAssertEqual(RelayProcess.number(drained, "turn", "redirects", "draining"), 1)
        XCTAssertTrue(second.relay.process.isRunning, "still draining while its allocation relayed")
        XCTAssertTrue(eventually(seconds: 15) { !second.relay.process.isRunning }, "exits when the drain ends, on its own")
        XCTAssertEqual(second.relay.stop(), 0)
        XCTAssertTrue(second.relay.log.contains("draining for 4 s"), second.relay.log)
    }
}
