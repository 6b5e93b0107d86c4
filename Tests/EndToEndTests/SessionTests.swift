import DatagramEngine
import Foundation
import TestPorts
import XCTest

/// Sessions through the real server: pairs, fan-out, latching, hijack, limits, lifecycle.
final class SessionTests: XCTestCase {
    var relay: RelayProcess!

    override func setUpWithError() throws {
        relay = try RelayProcess(ports: PortBlock(count: 200), ["--workers", "2"])
    }

    override func tearDown() {
        XCTAssertEqual(relay.stop(), 0, relay.log)
    }

    func testPairForwardsBothWaysFromTheLegAddresses() throws {
        let session = try relay.createSession()
        let peers = try Peers(count: 2)
        // Datagrams to different sockets may be handled in any order: let each latch land first.
        peers.send(from: 0, to: session.legs[0], [1])  // latches leg 0; nowhere to go yet
        try relay.waitForLatch(session: session.id, leg: 0)
        peers.send(from: 1, to: session.legs[1], [2])  // latches leg 1; goes to peer 0
        try relay.waitForLatch(session: session.id, leg: 1)
        peers.send(from: 0, to: session.legs[0], [3])  // goes to peer 1
        let arrivals = peers.collect(expected: 2)
        XCTAssertEqual(arrivals.count, 2)
        XCTAssertEqual(arrivals.first { $0.peer == 0 }?.bytes, [2])
        XCTAssertEqual(arrivals.first { $0.peer == 0 }?.source, session.legs[0], "replies come from the peer's own leg")
        XCTAssertEqual(arrivals.first { $0.peer == 1 }?.bytes, [3])
        XCTAssertEqual(arrivals.first { $0.peer == 1 }?.source, session.legs[1])

        let info = try XCTUnwrap(relay.request("GET", "/v1/sessions/\(session.id)").json)
        let legs = try XCTUnwrap(info["legs"] as? [[String: Any]])
        XCTAssertEqual((legs[0]["latched"] as? [String: Any])?["port"] as? Int, Int(peers.address(0).port))
        XCTAssertEqual(legs[0]["packets_in"] as? Int, 2)
        XCTAssertEqual(legs[1]["packets_out"] as? Int, 1)
        XCTAssertEqual((legs[0]["drops"] as? [String: Any])?["no_destination"] as? Int, 1)
    }

    func testFourLegFanOutEveryLegHearsEveryOther() throws {
        let session = try relay.createSession(#"{"legs": 4}"#)
        let peers = try Peers(count: 4)
        for peer in 0..<4 { peers.send(from: peer, to: session.legs[peer], [0xFF]) }  // latch all
        for leg in 0..<4 { try relay.waitForLatch(session: session.id, leg: leg) }
        for peer in 0..<4 { peers.send(from: peer, to: session.legs[peer], [UInt8(peer)]) }
        // The latching datagrams reach whoever had latched before them: not counted here.
        let arrivals = peers.collect(expected: 12) { $0.bytes != [0xFF] }.filter { $0.bytes != [0xFF] }
        XCTAssertEqual(arrivals.count, 12)
        for peer in 0..<4 {
            let heard = Set(arrivals.filter { $0.peer == peer }.map { $0.bytes[0] })
            XCTAssertEqual(heard, Set((0..<4).filter { $0 != peer }.map(UInt8.init)), "peer \(peer)")
        }
    }

    func testHijackAndForeignLegAreRefusedAndCounted() throws {
        let session = try relay.createSession()
        let peers = try Peers(count: 3)
        peers.send(from: 0, to: session.legs[0], [1])
        peers.send(from: 1, to: session.legs[1], [2])
        _ = peers.collect(expected: 1)
        peers.send(from: 2, to: session.legs[0], [66])  // a stranger on a latched leg
        peers.send(from: 0, to: session.legs[1], [67])  // a peer on the other leg
        // Once both are counted as dropped, anything forwarded would already be waiting.
        let info = try relay.waitFor("/v1/sessions/\(session.id)") { object in
            let legs = object["legs"] as? [[String: Any]] ?? []
            return legs.count == 2 && legs.allSatisfy { RelayProcess.number($0, "drops", "hijack") ?? 0 >= 1 }
        }
        let arrivals = peers.pending()
        XCTAssertTrue(arrivals.isEmpty, "nothing forwarded: \(arrivals.map(\.bytes))")
        let legs = try XCTUnwrap(info["legs"] as? [[String: Any]])
        XCTAssertEqual((legs[0]["drops"] as? [String: Any])?["hijack"] as? Int, 1)
        XCTAssertEqual((legs[1]["drops"] as? [String: Any])?["hijack"] as? Int, 1)
        XCTAssertEqual((legs[0]["latched"] as? [String: Any])?["port"] as? Int, Int(peers.address(0).port), "latch unchanged")
    }

    func testSilentLegRelatchesForNATRebinding() throws {
        let session = try relay.createSession(#"{"relatch_after_seconds": 1}"#)
        let peers = try Peers(count: 3)
        peers.send(from: 0, to: session.legs[0], [1])
        try relay.waitForLatch(session: session.id, leg: 0)
        peers.send(from: 1, to: session.legs[1], [2])
        _ = peers.collect(expected: 1)
        // Not an ordering sleep: the feature is "silent for 1 s", and leg 0 was last heard
        // before the latch above was seen, so 1.3 s of monotonic time cover it on any machine.
        usleep(1_300_000)
        peers.send(from: 2, to: session.legs[0], [3])  // peer 0 "moved" to peer 2's address
        let arrivals = peers.collect(expected: 1)
        XCTAssertEqual(arrivals.map(\.peer), [1])
        peers.send(from: 1, to: session.legs[1], [4])
        XCTAssertEqual(peers.collect(expected: 1).map(\.peer), [2], "replies follow the new address")
    }

    func testRateLimitAndAllowedSources() throws {
        // The bucket starts full (10) and refills at 10/s from the session's creation: however
        // slow this machine is, at most 10 + 10/s x (the time the test took) + 1 pass, at least 10.
        let start = Date()
        let limited = try relay.createSession(#"{"max_packets_per_second": 10}"#)
        let peers = try Peers(count: 2)
        peers.send(from: 1, to: limited.legs[1], [0])
        try relay.waitForLatch(session: limited.id, leg: 1)  // leg B latched before A's burst
        for _ in 0..<100 { peers.send(from: 0, to: limited.legs[0], [1]) }
        let info = try relay.waitFor("/v1/sessions/\(limited.id)") { object in
            guard let legA = (object["legs"] as? [[String: Any]])?.first else { return false }
            return (legA["packets_in"] as? Int ?? 0) + (RelayProcess.number(legA, "drops", "rate_limit") ?? 0) >= 100
        }
        let elapsed = Date().timeIntervalSince(start)
        let legA = try XCTUnwrap((info["legs"] as? [[String: Any]])?.first)
        let passed = try XCTUnwrap(legA["packets_in"] as? Int)
        XCTAssertEqual(passed + (RelayProcess.number(legA, "drops", "rate_limit") ?? 0), 100, "every datagram passed or was counted")
        XCTAssertGreaterThanOrEqual(passed, 10, "the full bucket passes")
        XCTAssertLessThanOrEqual(Double(passed), 11 + 10 * elapsed.rounded(.up), "a 10/s bucket over \(elapsed) s")
        XCTAssertEqual(peers.collect(expected: passed).filter { $0.peer == 1 }.count, passed, "what passed was forwarded")

        let fenced = try relay.createSession(#"{"allowed_sources": ["192.0.2.0/24"]}"#)
        peers.send(from: 0, to: fenced.legs[0], [1])
        peers.send(from: 1, to: fenced.legs[1], [2])
        let fencedInfo = try relay.waitFor("/v1/sessions/\(fenced.id)") { object in
            let legs = object["legs"] as? [[String: Any]] ?? []
            return legs.count == 2 && legs.allSatisfy { RelayProcess.number($0, "drops", "source_not_allowed") ?? 0 >= 1 }
        }
        XCTAssertTrue(peers.pending().isEmpty)
        let legs = try XCTUnwrap(fencedInfo["legs"] as? [[String: Any]])
        XCTAssertEqual((legs[0]["drops"] as? [String: Any])?["source_not_allowed"] as? Int, 1)
        XCTAssertTrue(legs[0]["latched"] is NSNull)
    }

    func testListDeleteAndIdleExpiry() throws {
        let kept = try relay.createSession()
        let brief = try relay.createSession(#"{"idle_timeout_seconds": 1}"#)
        let list = try XCTUnwrap(relay.request("GET", "/v1/sessions").json?["sessions"] as? [[String: Any]])
        XCTAssertEqual(Set(list.compactMap { $0["id"] as? String }), [kept.id, brief.id])
        XCTAssertEqual(try relay.request("DELETE", "/v1/sessions/\(kept.id)").status, 204)
        XCTAssertEqual(try relay.request("GET", "/v1/sessions/\(kept.id)").status, 404)
        XCTAssertEqual(try relay.request("DELETE", "/v1/sessions/\(kept.id)").status, 404)
        // Its ports no longer forward: the relay closes its sockets (in the worker's next turn,
        // not before the DELETE is answered), after which the ports can be bound here, and what
        // is sent to them arrives here rather than at the other peer.
        var heirs: Peers?
        XCTAssertTrue(eventually { heirs = try? Peers(binding: kept.legs); return heirs != nil },
                      "the deleted session's ports \(kept.legs) are still bound")
        let peers = try Peers(count: 2)
        peers.send(from: 0, to: kept.legs[0], [1])
        peers.send(from: 1, to: kept.legs[1], [2])
        XCTAssertEqual(try XCTUnwrap(heirs).collect(expected: 2).map(\.bytes).sorted { $0[0] < $1[0] }, [[1], [2]])
        XCTAssertEqual(peers.pending().map(\.bytes), [])
        // The idle one expires by itself (housekeeping runs twice a second).
        let deadline = Date().addingTimeInterval(20)
        var status = 200
        while status == 200 && Date() < deadline {
            usleep(50_000)
            status = try relay.request("GET", "/v1/sessions/\(brief.id)").status
        }
        XCTAssertEqual(status, 404)
    }
}
