import DatagramEngine
@testable import RelayCore
import NetAddress
import TestPorts
import STUN
import XCTest

/// Every error code of issue 10 where it applies, each from a real socket.
final class TurnErrorCodeTests: XCTestCase {
    func test400BadRequest() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        XCTAssertEqual(client.ask(.allocate)?.errorCode, 400, "no REQUESTED-TRANSPORT")
        XCTAssertEqual(client.allocate { $0.append(.requestedAddressFamily, [1, 0, 0, 0])
            $0.append(.additionalAddressFamily, [2, 0, 0, 0]) }?.errorCode, 400, "both families")
        XCTAssertEqual(client.allocate { $0.append(.additionalAddressFamily, [1, 0, 0, 0]) }?.errorCode, 400)
        XCTAssertEqual(client.allocate { $0.append(.evenPort, [0])
            $0.append(.reservationToken, [1, 2, 3, 4, 5, 6, 7, 8]) }?.errorCode, 400, "EVEN-PORT with a token")
        XCTAssertTrue(try XCTUnwrap(client.allocate()).isSuccess)
        let (_, peer) = try harness.socket()
        XCTAssertEqual(client.bind(0x3FFF, peer)?.errorCode, 400, "channel below 0x4000")
        XCTAssertEqual(client.bind(0x8000, peer)?.errorCode, 400, "channel above 0x7FFF")
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, peer)).isSuccess)
        let (_, other) = try harness.socket()
        XCTAssertEqual(client.bind(0x4000, other)?.errorCode, 400, "channel bound to another peer")
        XCTAssertEqual(client.bind(0x4001, peer)?.errorCode, 400, "peer bound to another channel")
        XCTAssertEqual(client.ask(.createPermission)?.errorCode, 400, "no XOR-PEER-ADDRESS")
    }

    /// A 400 names the rule the request broke (uclient and browsers' logs print the phrase);
    /// other codes keep their standard phrase.
    func test400SaysWhy() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        XCTAssertEqual(client.ask(.allocate)?.errorReason, "REQUESTED-TRANSPORT missing")
        XCTAssertEqual(client.allocate { $0.append(.additionalAddressFamily, [1, 0, 0, 0]) }?.errorReason,
                       "ADDITIONAL-ADDRESS-FAMILY must be IPv6")
        XCTAssertEqual(client.ask(.refresh)?.errorReason, "Allocation Mismatch", "a standard phrase stays")
        XCTAssertTrue(try XCTUnwrap(client.allocate()).isSuccess)
        let (_, peer) = try harness.socket()
        let (_, other) = try harness.socket()
        XCTAssertEqual(client.bind(0x3FFF, peer)?.errorReason, "Channel number out of range")
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, peer)).isSuccess)
        XCTAssertEqual(client.bind(0x4000, other)?.errorReason, "Channel number bound to another peer")
        XCTAssertEqual(client.bind(0x4001, peer)?.errorReason, "Peer bound to another channel number")
        XCTAssertEqual(client.ask(.createPermission)?.errorReason, "XOR-PEER-ADDRESS missing")
        // Unknown methods are refused before authentication.
        let unknown = MessageBuilder(MessageType(Method(rawValue: 0x00A), .request), transactionID: .random()).bytes
        XCTAssertEqual(harness.ask(unknown, from: client.socket)?.errorCode, 400)
    }

    func test401WrongPasswordUnknownUserAndExpiredREST() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        client.password = "wrong"
        let answer = try XCTUnwrap(client.allocate())
        XCTAssertEqual(answer.errorCode, 401)
        XCTAssertNotNil(try answer.text(.nonce), "a 401 always lets the client try again")
        client.username = "mallory"
        XCTAssertEqual(client.allocate()?.errorCode, 401)
        XCTAssertEqual(harness.table.counters[auth: .badIntegrity], 1)
        XCTAssertEqual(harness.table.counters[auth: .unknownUser], 1)
        XCTAssertEqual(harness.table.counters[refused: .unauthenticated], 2)

        // REST credentials minted for one hour from the harness's wall clock.
        let expiry = harness.wall.seconds.withLock { $0 } + 3600
        var rest = try TurnTestClient(harness)
        rest.username = "\(expiry):carol"
        rest.password = TurnCredentials.restPassword(secret: "rest-secret", username: rest.username)
        XCTAssertTrue(try XCTUnwrap(rest.allocate()).isSuccess)
        harness.wall.seconds.withLock { $0 = expiry }
        XCTAssertEqual(rest.ask(.refresh)?.errorCode, 401, "expired REST username")
        XCTAssertEqual(harness.table.counters[auth: .expired], 1)
    }

    func test403PeerThePolicyRefuses() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(client.allocate()).isSuccess)
        let outside = Endpoint(host: "192.0.2.1", port: 9)!
        XCTAssertEqual(client.permit(outside)?.errorCode, 403)
        XCTAssertEqual(client.bind(0x4000, outside)?.errorCode, 403)
    }

    func test420UnknownComprehensionRequiredAttribute() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        let answer = try XCTUnwrap(client.allocate { $0.append(AttributeType(rawValue: 0x7FF0), [1, 2, 3, 4]) })
        XCTAssertEqual(answer.errorCode, 420)
        XCTAssertEqual(try answer.value(.unknownAttributes, AttributeValue.unknownAttributes), [AttributeType(rawValue: 0x7FF0)])
        XCTAssertEqual(answer.integrity(key: client.key), .valid, "signed, as the client authenticated")
        // Comprehension-optional ones are ignored.
        XCTAssertTrue(try XCTUnwrap(client.allocate { $0.append(AttributeType(rawValue: 0xC001), [1]) }).isSuccess)
    }

    func test437AllocationMismatch() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        XCTAssertEqual(client.ask(.refresh)?.errorCode, 437)
        let own = client.address
        XCTAssertEqual(client.ask(.createPermission) { $0.append(.xorPeerAddress, xorAddress: own) }?.errorCode, 437)
        XCTAssertTrue(try XCTUnwrap(client.allocate()).isSuccess)
        XCTAssertEqual(client.allocate()?.errorCode, 437, "a second Allocate on the same 5-tuple")
    }

    func test438StaleNonce() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(client.allocate()).isSuccess)
        harness.advance(seconds: 601)
        let stale = try XCTUnwrap(harness.ask(client.signed(.refresh), from: client.socket))
        XCTAssertEqual(stale.errorCode, 438)
        let fresh = try XCTUnwrap(stale.text(.nonce))
        XCTAssertNotEqual(fresh, client.nonce)
        XCTAssertTrue(try XCTUnwrap(client.ask(.refresh)).isSuccess, "the new nonce works")
    }

    func test440And443AddressFamilies() throws {
        let harness = try InMemoryTurnHarness(ipv6: false)
        var client = try TurnTestClient(harness)
        XCTAssertEqual(client.allocate { $0.append(.requestedAddressFamily, [2, 0, 0, 0]) }?.errorCode, 440)
        // ADDITIONAL-ADDRESS-FAMILY the relay cannot serve: IPv4 only, with ADDRESS-ERROR-CODE.
        let partial = try XCTUnwrap(client.allocate { $0.append(.additionalAddressFamily, [2, 0, 0, 0]) })
        XCTAssertTrue(partial.isSuccess)
        XCTAssertEqual(try partial.xorAddresses(.xorRelayedAddress).count, 1)
        XCTAssertEqual(try partial.value(.addressErrorCode) { Array($0.prefix(4)) }, [2, 0, 4, 40])
        XCTAssertEqual(client.permit(Endpoint(host: "::1", port: 5)!)?.errorCode, 443)
    }

    func test441AnotherUsersAllocation() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(client.allocate()).isSuccess)
        client.username = "bob"
        client.password = "hunter2"
        XCTAssertEqual(client.ask(.refresh)?.errorCode, 441)
    }

    func test442UnsupportedTransport() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        XCTAssertEqual(client.ask(.allocate) { $0.append(.requestedTransport, [6, 0, 0, 0]) }?.errorCode, 442)
    }

    func test486QuotaAnd508Capacity() throws {
        let harness = try InMemoryTurnHarness(portCount: 4) { $0.maxAllocationsPerUser = 1 }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        var second = try TurnTestClient(harness)
        XCTAssertEqual(second.allocate()?.errorCode, 486)
        XCTAssertEqual(harness.table.counters[refused: .allocationQuotaReached], 1)
        // TURN may hold half of the 4 ports: bob's allocation takes the second, and a third
        // user's finds none.
        second.username = "bob"
        second.password = "hunter2"
        XCTAssertTrue(try XCTUnwrap(second.allocate()).isSuccess)
        var third = try TurnTestClient(harness)
        third.username = "\(harness.wall.seconds.withLock { $0 } + 60):dave"
        third.password = TurnCredentials.restPassword(secret: "rest-secret", username: third.username)
        XCTAssertEqual(third.allocate()?.errorCode, 508)
        XCTAssertEqual(harness.table.counters[refused: .insufficientCapacity], 1)
    }
}
