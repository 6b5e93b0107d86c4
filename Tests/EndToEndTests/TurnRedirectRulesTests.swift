import Foundation
import Glibc
@testable import LoadGen
import NetAddress
import STUN
import TestPorts
import TestSupport
import XCTest

/// The rules of 300 Try Alternate, through the real executable: a full relay challenges an
/// unauthenticated Allocate first (401, not 300); its 300 is signed with the client's key and
/// names an alternate of the client's family, in turn; with none of that family the refusal
/// is 508 as before; a user over their own quota gets 486; a reload (SIGHUP) changes the
/// alternates and the ready threshold.
final class TurnRedirectRulesTests: XCTestCase {
    func testRedirectsAreSignedOfTheClientsFamilyAndReloadable() throws {
        let siblings = ["192.0.2.2:3478", "192.0.2.3:3478"]
        let sibling6 = "[2001:db8::2]:3478"
        let config = try ConfigFixture(self, #"{"turn_alternates": ["\#(siblings[0])", "\#(siblings[1])", "\#(sibling6)"]}"#)
        let port4 = try IndependentPeer(host: "127.0.0.1").port
        var listeners = ["--turn", "127.0.0.1:\(port4)"]
        let port6 = IPv6Loopback.isAvailable ? try IndependentPeer(host: "::1").port : nil
        if let port6 { listeners += ["--turn", "[::1]:\(port6)"] }
        let relay = try RelayProcess(ports: PortBlock(count: 20), [
            "--config", config.path, "--relay-address", "127.0.0.1", "--turn-realm", "rules.test",
            "--turn-user", "alice:a", "--turn-user", "bob:b", "--turn-user", "carol:c",
            "--turn-max-allocations", "2", "--turn-max-allocations-per-user", "1",
        ] + listeners)
        defer { XCTAssertEqual(relay.stop(), 0) }
        let server4 = Endpoint(host: "127.0.0.1", port: port4)!

        // A user over their own quota is refused, never sent on: a sibling would refuse too.
        XCTAssertNoThrow(try TurnWireClient(server: server4, username: "alice", password: "a").allocate())
        let again = try TurnWireClient(server: server4, username: "alice", password: "a").ask(.allocate) {
            $0.append(.requestedTransport, [17, 0, 0, 0])
        }
        XCTAssertEqual(again.errorCode?.code, 486)
        XCTAssertNil(try again.plainAddress(.alternateServer))
        XCTAssertNoThrow(try TurnWireClient(server: server4, username: "bob", password: "b").allocate())

        // Full. Without credentials the answer is the challenge, which says nothing of siblings.
        let carol = try TurnWireClient(server: server4, username: "carol", password: "c")
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        bare.append(.requestedTransport, [17, 0, 0, 0])
        let challenge = try carol.exchange(bare.bytes)
        XCTAssertEqual(challenge.errorCode?.code, 401)
        XCTAssertNil(try challenge.plainAddress(.alternateServer))

        // Signed, the answer is 300, signed too, naming the IPv4 siblings in turn.
        var named: [String] = []
        for _ in 0..<3 {
            let client = try TurnWireClient(server: server4, username: "carol", password: "c")
            let answer = try client.ask(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
            XCTAssertEqual(answer.errorCode?.code, 300)
            XCTAssertEqual(answer.integrity(key: client.key), .valid, "MESSAGE-INTEGRITY under carol's key")
            named.append(try XCTUnwrap(answer.plainAddress(.alternateServer)).description)
        }
        XCTAssertEqual(named, [siblings[0], siblings[1], siblings[0]])

        // An IPv6 client gets the IPv6 sibling; once the reload leaves none, 508 as before.
        if let port6 {
            let server6 = Endpoint(host: "::1", port: port6)!
            let client6 = try TurnWireClient(server: server6, host: "::1", username: "carol", password: "c")
            let answer = try client6.ask(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
            XCTAssertEqual(answer.errorCode?.code, 300)
            XCTAssertEqual(try answer.plainAddress(.alternateServer)?.description, sibling6)
        }
        try config.write(#"{"turn_alternates": ["\#(siblings[1])"], "ready_threshold": 0.5}"#)
        kill(relay.process.processIdentifier, SIGHUP)
        XCTAssertTrue(eventually { relay.log.contains("SIGHUP: reloaded") }, relay.log)
        XCTAssertTrue(relay.log.contains("turn_alternates"), relay.log)
        let client = try TurnWireClient(server: server4, username: "carol", password: "c")
        let answer = try client.ask(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
        XCTAssertEqual(try answer.plainAddress(.alternateServer)?.description, siblings[1], "the reloaded list")
        if let port6 {
            let client6 = try TurnWireClient(server: Endpoint(host: "::1", port: port6)!, host: "::1", username: "carol", password: "c")
            XCTAssertEqual(try client6.ask(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }.errorCode?.code, 508)
        } else {
            try IPv6Loopback.require()
        }
        XCTAssertEqual(try relay.request("GET", "/readyz").json?["threshold"] as? Double, 0.5)
        let stats = try relay.waitFor { RelayProcess.number($0, "turn", "redirects", "capacity") == (port6 == nil ? 4 : 5) }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "redirects", "capacity"), port6 == nil ? 4 : 5)
        XCTAssertEqual(RelayProcess.number(stats, "turn", "allocations_refused", "486"), 1)
    }
}
