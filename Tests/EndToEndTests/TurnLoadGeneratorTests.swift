import Foundation
import TestPorts
import XCTest

/// mediarelay-load's TURN mode against mediarelay's own TURN listener: every datagram both ways,
/// the full ECN/DSCP check (the relay copies the codepoint and, by default, mirrors DSCP),
/// refresh rounds while data flows, the relay's CPU per datagram from /v1/stats, and every
/// allocation released at the end.
final class TurnLoadGeneratorTests: XCTestCase {
    func testTurnRunThroughTheRealServerKeepsMarksAndReleases() throws {
        let turnPort = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(count: 50), ["--turn", "127.0.0.1:\(turnPort)", "--turn-realm", "load.test",
                                      "--turn-user", "load:pw", "--turn-allowed-peer", "127.0.0.1/32"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let tos = 46 << 2 | 1  // EF with ECT(1): ECT(1) must not become ECT(0)
        let object = try LoadGeneratorTests.runLoad([
            "--turn", "127.0.0.1:\(turnPort)", "--turn-user", "load:pw", "--streams", "4", "--rate", "400", "--tos", "\(tos)",
            "--seconds", "1", "--warmup", "0.2", "--bidirectional", "--turn-refresh", "0.5", "--drain", "5",
            "--relay", "http://127.0.0.1:\(relay.httpPort)", "--relay-pid", "\(relay.process.processIdentifier)",
        ])
        XCTAssertEqual(object["latched_streams"] as? Int, 4)
        let sent = try XCTUnwrap(object["sent"] as? Int)
        XCTAssertGreaterThan(sent, 0)
        XCTAssertEqual(object["received"] as? Int, sent, "every datagram, both ways")
        XCTAssertEqual(object["foreign"] as? Int, 0)
        XCTAssertEqual(object["ecn_kept"] as? Double, 1)
        XCTAssertEqual(object["dscp_kept"] as? Double, 1)
        XCTAssertEqual((object["tos_seen"] as? [String: Any]).map { Array($0.keys) }, ["\(tos)"], "no other marks arrived")
        XCTAssertGreaterThanOrEqual(object["turn_refreshes"] as? Int ?? 0, 1)
        XCTAssertEqual(object["turn_failed_refreshes"] as? Int, 0)
        XCTAssertNotNil(object["relay_cpu_ns_per_packet"] as? Double, "mediarelay's /v1/stats figure")
        XCTAssertNotNil(object["relay_proc_cpu_ns_per_packet"] as? Double)

        // The workers publish their counters to the HTTP thread as snapshots: wait for the release.
        var turn = try XCTUnwrap(relay.stats()["turn"] as? [String: Any])
        let deadline = Date().addingTimeInterval(10)
        while turn["allocations"] as? Int != 0 && Date() < deadline {
            usleep(50_000)
            turn = try XCTUnwrap(relay.stats()["turn"] as? [String: Any])
        }
        XCTAssertEqual(turn["allocations_created"] as? Int, 4)
        XCTAssertEqual(turn["allocations"] as? Int, 0, "released at the end")
        XCTAssertEqual(turn["allocations_deleted"] as? Int, 4)
    }
}
