import DatagramEngine
@testable import RelayCore
import NetAddress
import STUN
import TestSupport
import XCTest

/// 300 Try Alternate (RFC 8489 section 10) from a relay that will not take a new allocation:
/// only after authentication (so it carries MESSAGE-INTEGRITY), only to an alternate of the
/// client's family, in turn, counted by reason; without one, the refusal there was before (and
/// 403 for a new allocation while draining). A user over their own quota is refused, never
/// redirected.
final class TurnRedirectTests: XCTestCase {
    let siblings = [Endpoint(host: "192.0.2.2", port: 3478)!, Endpoint(host: "192.0.2.3", port: 3478)!]
    let sibling6 = Endpoint(host: "2001:db8::2", port: 3478)!

    func testFullRelayRedirectsInTurnWithIntegrity() throws {
        let harness = try InMemoryTurnHarness {
            $0.maxAllocations = 1
            $0.alternates = TurnAlternates(plain: self.siblings + [self.sibling6])
        }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        var named: [Endpoint] = []
        for _ in 0..<3 {
            var client = try TurnTestClient.bob(harness)
            let answer = try XCTUnwrap(client.allocate())
            XCTAssertEqual(answer.errorCode, 300)
            XCTAssertEqual(answer.integrity(key: client.key), .valid, "a 300 after authentication is signed")
            named.append(try XCTUnwrap(answer.plainAddress(.alternateServer)))
            XCTAssertFalse(answer.contains(.alternateDomain), "ALTERNATE-DOMAIN is for TLS clients only")
        }
        XCTAssertEqual(named, [siblings[0], siblings[1], siblings[0]], "IPv4 alternates only, in turn")
        XCTAssertEqual(harness.table.counters[redirect: .capacity], 3)
        XCTAssertEqual(harness.table.counters[refused: .insufficientCapacity], 0)
    }

    func testUnauthenticatedAllocateAtCapacityIsChallengedFirst() throws {
        let harness = try InMemoryTurnHarness {
            $0.maxAllocations = 1
            $0.alternates = TurnAlternates(plain: self.siblings)
        }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        let (socket, _) = try harness.socket()
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        bare.append(.requestedTransport, [17, 0, 0, 0])
        let answer = try XCTUnwrap(harness.ask(bare.bytes, from: socket))
        XCTAssertEqual(answer.errorCode, 401)
        XCTAssertFalse(answer.contains(.alternateServer))
        XCTAssertEqual(harness.table.counters[redirect: .capacity], 0)
    }

    func testIPv6ClientGetsAnIPv6AlternateOrTheOldRefusal() throws {
        try IPv6Loopback.require()
        let harness = try InMemoryTurnHarness(listenOn: "::1") {
            $0.maxAllocations = 1
            $0.alternates = TurnAlternates(plain: self.siblings + [self.sibling6])
        }
        var first = try TurnTestClient(harness, host: "::1")
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        var client = try TurnTestClient(harness, host: "::1")
        client.username = "bob"
        client.password = "hunter2"
        let answer = try XCTUnwrap(client.allocate())
        XCTAssertEqual(answer.errorCode, 300)
        XCTAssertEqual(try answer.plainAddress(.alternateServer), sibling6)

        harness.table.shared.update(TurnAlternates(plain: siblings))
        var another = try TurnTestClient(harness, host: "::1")
        another.username = "bob"
        another.password = "hunter2"
        XCTAssertEqual(another.allocate()?.errorCode, 508, "no IPv6 alternate: refused as without alternates")
    }

    func testPerUserQuotaStays486() throws {
        let harness = try InMemoryTurnHarness {
            $0.maxAllocationsPerUser = 1
            $0.alternates = TurnAlternates(plain: self.siblings)
        }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        var second = try TurnTestClient(harness)
        let answer = try XCTUnwrap(second.allocate())
        XCTAssertEqual(answer.errorCode, 486)
        XCTAssertFalse(answer.contains(.alternateServer))
    }

    func testNoRelayedPortRedirectsAsPorts() throws {
        let harness = try InMemoryTurnHarness(turnPorts: 1) { $0.alternates = TurnAlternates(plain: self.siblings) }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        var second = try TurnTestClient.bob(harness)
        XCTAssertEqual(second.allocate()?.errorCode, 300)
        XCTAssertEqual(harness.table.counters[redirect: .ports], 1)
        XCTAssertEqual(harness.table.shared.allocations, 1, "the refused one is not counted")
    }

    func testWithoutAlternatesTheRefusalIsAsBefore() throws {
        let harness = try InMemoryTurnHarness(turnPorts: 1) { _ in }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        var second = try TurnTestClient.bob(harness)
        XCTAssertEqual(second.allocate()?.errorCode, 508)
    }

    func testDrainingRedirectsNewClientsButKeepsExistingOnes() throws {
        let harness = try InMemoryTurnHarness { $0.alternates = TurnAlternates(plain: self.siblings) }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        harness.table.shared.beginDrain()
        var second = try TurnTestClient.bob(harness)
        XCTAssertEqual(second.allocate()?.errorCode, 300)
        XCTAssertEqual(harness.table.counters[redirect: .draining], 1)
        XCTAssertTrue(try XCTUnwrap(first.ask(.refresh) { $0.append(.lifetime, uint32: 600) }).isSuccess,
                      "an existing allocation goes on")
    }

    func testDrainingWithoutAlternatesRefusesNewAllocationsOnly() throws {
        let harness = try InMemoryTurnHarness()
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        harness.table.shared.beginDrain()
        var client = try TurnTestClient.bob(harness)
        XCTAssertEqual(client.allocate()?.errorCode, 403, "a new allocation would be cut off when the drain ends")
        XCTAssertTrue(try XCTUnwrap(first.ask(.refresh) { $0.append(.lifetime, uint32: 600) }).isSuccess,
                      "an existing allocation goes on")
    }

    func testTLSAlternatesAreNeverGivenToUDPClientsAndCarryTheDomain() throws {
        let harness = try InMemoryTurnHarness {
            $0.maxAllocations = 1
            $0.alternates = TurnAlternates(tls: self.siblings, domain: "turn.example.org")
        }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        var second = try TurnTestClient.bob(harness)
        XCTAssertEqual(second.allocate()?.errorCode, 508)
        let redirect = try XCTUnwrap(harness.table.shared.alternate(for: .tls, ipv4: true))
        XCTAssertEqual(redirect, TurnRedirect(server: siblings[0], domain: "turn.example.org"))
    }
}
