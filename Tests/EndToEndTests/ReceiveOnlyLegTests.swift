import DatagramEngine
import Foundation
import NetAddress
import TestPorts
import XCTest

/// A receive-only peer latches its leg once and then stays silent, as a viewer or a muted
/// participant does. Once relatch_after_seconds have passed, a source at another address
/// (127.0.0.2 here) must not take the leg and its media under the default policy, while the
/// receiver itself may come back from a new port (NAT rebinding). "any" and "never" do what
/// they say. One session per policy, driven side by side so the test waits out the silence once.
final class ReceiveOnlyLegTests: XCTestCase {
    func testASilentLegIsNotTakenByAnotherAddress() throws {
        let relay = try RelayProcess(ports: PortBlock(), [])
        defer { XCTAssertEqual(relay.stop(), 0, relay.log) }
        let policies = ["same_address", "any", "never"]
        let sessions = try policies.map { try relay.createSession(#"{"relatch": "\#($0)", "relatch_after_seconds": 1}"#) }
        // Per session i: local peer 2i sends media to leg A, 2i+1 receives on leg B; strangers[i]
        // sits on another address; rebound[i] is the receiver's address on a new port.
        let local = try Peers(count: 6)
        let strangers = try Peers(count: 3, family: Endpoint(host: "127.0.0.2", port: 0)!)
        let rebound = try Peers(count: 3)
        func legB(_ i: Int) throws -> [String: Any] {
            let info = try XCTUnwrap(relay.request("GET", "/v1/sessions/\(sessions[i].id)").json)
            return try XCTUnwrap((info["legs"] as? [[String: Any]])?[1])
        }
        func latchedPort(_ i: Int) throws -> Int? { ((try legB(i))["latched"] as? [String: Any])?["port"] as? Int }
        func hijacks(_ i: Int) throws -> Int { ((try legB(i))["drops"] as? [String: Any])?["hijack"] as? Int ?? 0 }

        for i in 0..<3 { local.send(from: 2 * i + 1, to: sessions[i].legs[1], [0]) }  // the receivers latch, then go silent
        try waitUntil { try (0..<3).allSatisfy { try latchedPort($0) == Int(local.address(2 * $0 + 1).port) } }
        for i in 0..<3 { local.send(from: 2 * i, to: sessions[i].legs[0], [1]) }
        XCTAssertEqual(Set(local.collect(expected: 3).map(\.peer)), [1, 3, 5], "media reaches every receiver")

        usleep(1_500_000)  // leg B has now been silent for longer than relatch_after_seconds
        for i in 0..<3 { strangers.send(from: i, to: sessions[i].legs[1], [66]) }
        try waitUntil { try hijacks(0) == 1 && hijacks(2) == 1 && latchedPort(1) == Int(strangers.address(1).port) }
        XCTAssertEqual(local.collect(expected: 1).map(\.peer), [2], "any: the stranger is heard by the sender")
        for i in 0..<3 { local.send(from: 2 * i, to: sessions[i].legs[0], [2]) }
        XCTAssertEqual(Set(local.collect(expected: 2).map(\.peer)), [1, 5], "same_address and never: the receiver keeps its media")
        XCTAssertEqual(strangers.collect(expected: 1).map(\.peer), [1], "any: the stranger took the silent leg")
        XCTAssertEqual(try latchedPort(0), Int(local.address(1).port))

        // The receiver comes back from a new port: a NAT rebinding.
        for i in [0, 2] { rebound.send(from: i, to: sessions[i].legs[1], [3]) }
        try waitUntil { try hijacks(2) == 2 && latchedPort(0) == Int(rebound.address(0).port) }
        XCTAssertEqual(local.collect(expected: 1).map(\.peer), [0], "same_address: the rebound receiver is heard")
        for i in [0, 2] { local.send(from: 2 * i, to: sessions[i].legs[0], [4]) }
        XCTAssertEqual(rebound.collect(expected: 1).map(\.peer), [0], "same_address: media follows the new port")
        XCTAssertEqual(local.collect(expected: 1).map(\.peer), [5], "never: media stays with the first source")
        XCTAssertEqual(try latchedPort(2), Int(local.address(5).port))
    }

    func testABadPolicyOrRTCPModeIsRefusedByName() throws {
        let relay = try RelayProcess(ports: PortBlock(), [])
        defer { XCTAssertEqual(relay.stop(), 0, relay.log) }
        for (body, field) in [(#"{"relatch": "sometimes"}"#, "relatch"), (#"{"relatch": 1}"#, "relatch"), (#"{"rtcp": "odd"}"#, "rtcp")] {
            let reply = try relay.request("POST", "/v1/sessions", body: body)
            XCTAssertEqual(reply.status, 400, body)
            XCTAssertTrue((reply.json?["error"] as? String)?.contains("\"\(field)\"") == true, reply.text)
        }
        let info = try XCTUnwrap(relay.request("POST", "/v1/sessions", body: "{}").json)
        XCTAssertEqual(info["relatch"] as? String, "same_address")
        XCTAssertEqual(info["rtcp"] as? String, "mux")
    }
}

/// Polls `condition` until it holds, failing after a generous deadline (the CI machine is busy).
func waitUntil(seconds: Double = 10, file: StaticString = #filePath, line: UInt = #line, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while try !condition() {
        guard Date() < deadline else { return XCTFail("condition not met within \(seconds) s", file: file, line: line) }
        usleep(20_000)
    }
}
