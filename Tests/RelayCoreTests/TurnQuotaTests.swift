import DatagramEngine
@testable import RelayCore
import NetAddress
import TestPorts
import STUN
import XCTest

/// Quotas and what the relay hands out: the bandwidth of one allocation, allocations in total,
/// channels per allocation, and the advertised address in XOR-RELAYED-ADDRESS.
final class TurnQuotaTests: XCTestCase {
    func testBandwidthPerAllocationDropsPastTheRate() throws {
        let harness = try TurnHarness { $0.bandwidthPerAllocation = 1000 }
        var client = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(client.allocate()).isSuccess)
        let (peer, peerAddress) = try harness.socket()
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, peerAddress)).isSuccess)
        // A second's worth (1,000 bytes) passes at once; the harness clock does not move, so
        // nothing refills and the rest is dropped and counted.
        for _ in 0..<15 { client.send(channelData(0x4000, [UInt8](repeating: 1, count: 100))) }
        for _ in 0..<10 { XCTAssertNotNil(harness.next(on: peer)) }
        XCTAssertEqual(harness.settle(on: peer), 0)
        XCTAssertEqual(harness.table.counters[drop: .bandwidth], 5)
        // A second later the bucket is full again.
        harness.advance(seconds: 1)
        client.send(channelData(0x4000, [UInt8](repeating: 1, count: 100)))
        XCTAssertNotNil(harness.next(on: peer))
    }

    /// --ecn-marking reloads for new allocations: each keeps the setting it was made with.
    func testAnAllocationKeepsTheMarkingSettingItWasMadeWith() throws {
        let harness = try TurnHarness { $0.bandwidthPerAllocation = 1000 }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        harness.table.shared.setECNMarking(false)
        var second = try TurnTestClient(harness)
        second.username = "bob"
        second.password = "hunter2"
        XCTAssertTrue(try XCTUnwrap(second.allocate()).isSuccess)
        let live = harness.table.store.liveIndices.map { harness.table.store[$0] }.sorted { $0.username < $1.username }
        XCTAssertEqual(live.map(\.ecnMarking), [true, false])
        XCTAssertEqual(live.map(\.bandwidth.rate), [1000, 1000])
    }

    func testTotalAllocationsCap() throws {
        let harness = try TurnHarness { $0.maxAllocations = 1 }
        var first = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(first.allocate()).isSuccess)
        var second = try TurnTestClient(harness)
        second.username = "bob"
        second.password = "hunter2"
        XCTAssertEqual(second.allocate()?.errorCode, 508)
        // Deleting the first frees the place.
        XCTAssertTrue(try XCTUnwrap(first.ask(.refresh) { $0.append(.lifetime, uint32: 0) }).isSuccess)
        XCTAssertTrue(try XCTUnwrap(second.allocate()).isSuccess)
    }

    /// Channels to one address on many ports share one permission, so only their own cap
    /// bounds them; a refresh of a bound channel is not a new one, and a reload may raise the cap.
    func testChannelsPastTheCapAreRefusedButRefreshesAreNot() throws {
        let harness = try TurnHarness { $0.limits.maxChannels = 2 }
        var client = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(client.allocate()).isSuccess)
        let peers = try (0..<3).map { _ in try harness.socket().address }
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, peers[0])).isSuccess)
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4001, peers[1])).isSuccess)
        XCTAssertEqual(client.bind(0x4002, peers[2])?.errorCode, 508)
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, peers[0])).isSuccess, "a refresh")
        XCTAssertEqual(harness.table.counters.channelsRefused, 1)
        XCTAssertEqual(harness.table.counters[refused: .insufficientCapacity], 0, "counted apart from Allocate's refusals")
        harness.table.shared.update(TurnLimits(maxChannels: 3))
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4002, peers[2])).isSuccess)
    }

    func testRelayedAddressIsTheAdvertisedOne() throws {
        let harness = try TurnHarness { $0.advertiseIPv4 = Endpoint(host: "203.0.113.7", port: 0)! }
        var client = try TurnTestClient(harness)
        let relayed = try XCTUnwrap(client.allocate()?.xorAddress(.xorRelayedAddress))
        XCTAssertEqual(relayed.hostText, "203.0.113.7")
        XCTAssertTrue(harness.pool.isHeld(relayed.port), "bound locally on the port it advertises")
    }
}

/// No amplification: an unauthenticated request never gets an answer larger than itself plus
/// TurnSettings.unauthenticatedSlack; a 401 that would be (a long realm, a tiny request) is not sent.
final class TurnAmplificationTests: XCTestCase {
    func testOversizedChallengeIsNotSent() throws {
        let harness = try TurnHarness {
            $0.authenticator = TurnAuthenticator(credentials: TurnCredentials(realm: String(repeating: "r", count: 120)))
        }
        let (socket, _) = try harness.socket()
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        bare.append(.requestedTransport, [17, 0, 0, 0])
        harness.send(bare.bytes, from: socket, to: harness.listener)
        XCTAssertEqual(harness.settle(on: socket), 0)
        XCTAssertEqual(harness.table.counters[drop: .amplification], 1)
        // A request padded by the client (as ICE agents pad with SOFTWARE) gets its 401.
        bare.append(.software, text: String(repeating: "s", count: 100))
        XCTAssertEqual(harness.ask(bare.bytes, from: socket)?.errorCode, 401)
    }
}

/// The peer policy with the relay's own ports: a permission is per address, so each Send
/// indication's port is checked too; another allocation's relayed address stays reachable.
final class TurnOwnPortTests: XCTestCase {
    func testSendToAnOwnPortIsDroppedButAnotherAllocationIsReached() throws {
        let ports = try PortBlock()
        var (harness, client, other) = try TurnHarness.withOwnPorts(ports)
        let relayed = try XCTUnwrap(client.allocate()?.xorAddress(.xorRelayedAddress))
        let otherRelayed = try XCTUnwrap(other.allocate()?.xorAddress(.xorRelayedAddress))
        XCTAssertTrue(try XCTUnwrap(client.permit(otherRelayed)).isSuccess)
        XCTAssertTrue(try XCTUnwrap(other.permit(relayed)).isSuccess)
        let ownPort = Endpoint(host: "127.0.0.1", port: ports.range.upperBound)!  // in the pool, not relayed
        XCTAssertEqual(client.bind(0x4000, ownPort)?.errorCode, 403)

        client.send(sendIndication(ownPort, [1]))
        client.send(sendIndication(otherRelayed, [2]))
        let arrived = try StunMessage(bytes: XCTUnwrap(harness.next(on: other.socket)).bytes)
        XCTAssertEqual(try arrived.value(.data) { Array($0) }, [2])
        XCTAssertEqual(harness.table.counters[drop: .forbiddenPeer], 1)
    }
}
