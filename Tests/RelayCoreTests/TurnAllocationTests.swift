import DatagramEngine
@testable import RelayCore
import NetAddress
import STUN
import XCTest

/// The TURN exchanges a WebRTC client makes, over real loopback sockets: Binding, the 401
/// dance, Allocate, permissions, channels, and data both ways with its ECN and DSCP marks.
final class TurnAllocationTests: XCTestCase {
    func testBindingIsAnsweredWithoutCredentialsAndNoLargerThanAllowed() throws {
        let harness = try InMemoryTurnHarness()
        let (socket, address) = try harness.socket()
        let request = MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes
        let answer = try XCTUnwrap(harness.ask(request, from: socket))
        XCTAssertEqual(answer.type, MessageType(.binding, .successResponse))
        XCTAssertEqual(try answer.xorAddress(.xorMappedAddress), address)
        XCTAssertLessThanOrEqual(answer.bytes.count, request.count + TurnSettings.unauthenticatedSlack)
    }

    func testAllocateAfterChallenge() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        // The first Allocate has no credentials: 401 with what the client needs to retry.
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        bare.append(.requestedTransport, [17, 0, 0, 0])
        let challenge = try XCTUnwrap(harness.ask(bare.bytes, from: client.socket))
        XCTAssertEqual(challenge.errorCode, 401)
        XCTAssertEqual(try challenge.text(.realm), TurnHarness.realm)
        XCTAssertNotNil(try challenge.text(.nonce))
        XCTAssertEqual(try challenge.value(.passwordAlgorithms, AttributeValue.passwordAlgorithms), [.sha256, .md5])
        XCTAssertNil(challenge.integrityType, "nothing to sign with yet")
        XCTAssertLessThanOrEqual(challenge.bytes.count, bare.bytes.count + TurnSettings.unauthenticatedSlack)

        let answer = try XCTUnwrap(client.allocate())
        XCTAssertTrue(answer.isSuccess, "\(String(describing: answer.errorCode))")
        XCTAssertEqual(answer.integrity(key: client.key), .valid)
        let relayed = try XCTUnwrap(answer.xorAddress(.xorRelayedAddress))
        XCTAssertEqual(relayed.hostText, "127.0.0.1")
        XCTAssertTrue(harness.pool.range.contains(relayed.port))
        XCTAssertEqual(try answer.value(.lifetime, AttributeValue.uint32), 600)
        XCTAssertEqual(try answer.xorAddress(.xorMappedAddress), client.address)
        XCTAssertEqual(harness.table.activeAllocations, 1)
        XCTAssertEqual(harness.table.counters[auth: .challenged], 1, "the bare Allocate")
        XCTAssertEqual(harness.table.counters[auth: .staleNonce], 1, "the client's first try, signed with no nonce")
    }

    func testSHA256CredentialsAndLifetimeBounds() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        client.algorithm = .sha256
        let answer = try XCTUnwrap(client.allocate { $0.append(.lifetime, uint32: 100_000) })
        XCTAssertTrue(answer.isSuccess)
        XCTAssertEqual(answer.integrityType, .messageIntegritySHA256)
        XCTAssertEqual(answer.integrity(key: client.key), .valid)
        XCTAssertEqual(try answer.value(.lifetime, AttributeValue.uint32), 3600, "capped at the maximum")
        let refreshed = try XCTUnwrap(client.ask(.refresh) { $0.append(.lifetime, uint32: 10) })
        XCTAssertEqual(try refreshed.value(.lifetime, AttributeValue.uint32), 600, "never below the default")
    }

    func testRetransmittedRequestsGetTheSameAnswer() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(client.allocate()).isSuccess)
        // A Refresh that deletes, sent twice: the second must not be told 437.
        let delete = client.signed(.refresh) { $0.append(.lifetime, uint32: 0) }
        let first = try XCTUnwrap(harness.ask(delete, from: client.socket))
        XCTAssertTrue(first.isSuccess)
        XCTAssertEqual(harness.table.activeAllocations, 0)
        let again = try XCTUnwrap(harness.ask(delete, from: client.socket))
        XCTAssertEqual(again.bytes, first.bytes)
        // A new Refresh (new transaction) now finds no allocation.
        XCTAssertEqual(client.ask(.refresh)?.errorCode, 437)
    }

    func testChannelDataBothWaysKeepsMarks() throws {
        let (harness, client, relayed, peer, _) = try InMemoryTurnHarness.withChannel(0x4001)

        let marks = TrafficClass(dscp: 46, ecn: .ect1)
        client.send(channelData(0x4001, [1, 2, 3, 4, 5]), trafficClass: marks)
        let atPeer = try XCTUnwrap(harness.next(on: peer))
        XCTAssertEqual(atPeer.bytes, [1, 2, 3, 4, 5])
        XCTAssertEqual(atPeer.source, relayed)
        XCTAssertEqual(atPeer.trafficClass, marks)

        let back = TrafficClass(dscp: 34, ecn: .ce)
        harness.send([9, 8, 7], from: peer, to: relayed, trafficClass: back)
        let atClient = try XCTUnwrap(harness.next(on: client.socket))
        XCTAssertEqual(atClient.bytes, channelData(0x4001, [9, 8, 7]))
        XCTAssertEqual(atClient.trafficClass, back)
        XCTAssertEqual(harness.table.counters.channelDataToPeers, 1)
        XCTAssertEqual(harness.table.counters.channelDataToClients, 1)
    }

    func testSendAndDataIndications() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        let relayed = try XCTUnwrap(client.allocate()?.xorAddress(.xorRelayedAddress))
        let (peer, peerAddress) = try harness.socket()
        // Without a permission nothing passes, either way.
        client.send(sendIndication(peerAddress, [1]))
        harness.send([2], from: peer, to: relayed)
        XCTAssertEqual(harness.settle(on: peer), 0)
        XCTAssertEqual(harness.settle(on: client.socket), 0)
        XCTAssertEqual(harness.table.counters[drop: .noPermission], 2)

        XCTAssertTrue(try XCTUnwrap(client.permit(peerAddress)).isSuccess)
        client.send(sendIndication(peerAddress, [1, 2, 3]), trafficClass: TrafficClass(dscp: 10, ecn: .ect0))
        let atPeer = try XCTUnwrap(harness.next(on: peer))
        XCTAssertEqual(atPeer.bytes, [1, 2, 3])
        XCTAssertEqual(atPeer.trafficClass, TrafficClass(dscp: 10, ecn: .ect0))
        harness.send([4, 5, 6, 7, 8], from: peer, to: relayed, trafficClass: TrafficClass(dscp: 0, ecn: .ect1))
        let atClient = try XCTUnwrap(harness.next(on: client.socket))
        let data = try StunMessage(bytes: atClient.bytes)
        XCTAssertEqual(data.type, MessageType(.data, .indication))
        XCTAssertEqual(try data.xorAddress(.xorPeerAddress), peerAddress)
        XCTAssertEqual(try data.value(.data) { Array($0) }, [4, 5, 6, 7, 8])
        XCTAssertEqual(atClient.trafficClass.ecn, .ect1)
    }

    func testTwoClientsReachEachOtherThroughTheirRelayedAddresses() throws {
        let harness = try InMemoryTurnHarness()
        var first = try TurnTestClient(harness)
        var second = try TurnTestClient.bob(harness)
        let firstRelayed = try XCTUnwrap(first.allocate()?.xorAddress(.xorRelayedAddress))
        let secondRelayed = try XCTUnwrap(second.allocate()?.xorAddress(.xorRelayedAddress))
        XCTAssertTrue(try XCTUnwrap(first.bind(0x4000, secondRelayed)).isSuccess)
        XCTAssertTrue(try XCTUnwrap(second.permit(firstRelayed)).isSuccess)
        first.send(channelData(0x4000, [42, 43]))
        let arrived = try StunMessage(bytes: XCTUnwrap(harness.next(on: second.socket)).bytes)
        XCTAssertEqual(try arrived.xorAddress(.xorPeerAddress), firstRelayed)
        XCTAssertEqual(try arrived.value(.data) { Array($0) }, [42, 43])
    }

    func testEvenPortReservationAndAdditionalFamily() throws {
        let harness = try TurnHarness()
        var rtp = try TurnTestClient(harness)
        let answer = try XCTUnwrap(rtp.allocate { $0.append(.evenPort, [0x80]) })
        let even = try XCTUnwrap(answer.xorAddress(.xorRelayedAddress))
        XCTAssertEqual(even.port % 2, 0)
        let token = try XCTUnwrap(answer.value(.reservationToken) { Array($0) })
        var rtcp = try TurnTestClient(harness)
        let reserved = try XCTUnwrap(rtcp.allocate { $0.append(.reservationToken, token) })
        XCTAssertEqual(try reserved.xorAddress(.xorRelayedAddress)?.port, even.port + 1)
        var again = try TurnTestClient(harness)
        XCTAssertEqual(again.allocate { $0.append(.reservationToken, token) }?.errorCode, 508, "a token is used once")

        var dual = try TurnTestClient(harness)
        let both = try XCTUnwrap(dual.allocate { $0.append(.additionalAddressFamily, [2, 0, 0, 0]) })
        let relayed = try both.xorAddresses(.xorRelayedAddress)
        XCTAssertEqual(relayed.map(\.isIPv4), [true, false])
        XCTAssertEqual(relayed.last?.hostText, "::1")
        var six = try TurnTestClient(harness)
        let v6 = try XCTUnwrap(six.allocate { $0.append(.requestedAddressFamily, [2, 0, 0, 0]) })
        XCTAssertEqual(try v6.xorAddress(.xorRelayedAddress)?.hostText, "::1")

        // coturn's clients send ADDITIONAL-ADDRESS-FAMILY under the draft's number 0x8032.
        var draft = try TurnTestClient(harness)
        let dualDraft = try XCTUnwrap(draft.allocate { $0.append(.additionalAddressFamilyDraft, [2, 0, 0, 0]) })
        XCTAssertEqual(try dualDraft.xorAddresses(.xorRelayedAddress).count, 2)
        // A dual allocation may ask for an even port, not reserve the next one.
        var evenDual = try TurnTestClient(harness)
        XCTAssertEqual(evenDual.allocate { $0.append(.evenPort, [0x80])
            $0.append(.additionalAddressFamily, [2, 0, 0, 0]) }?.errorCode, 400)
        let evenOnly = try XCTUnwrap(evenDual.allocate { $0.append(.evenPort, [0])
            $0.append(.additionalAddressFamily, [2, 0, 0, 0]) })
        XCTAssertEqual(try evenOnly.xorAddresses(.xorRelayedAddress).first.map { $0.port % 2 }, 0)
    }

    /// The allocation that redeems a token gets the family of the one that reserved the port
    /// (coturn's client asks for IPv6 only on the first of an RTP/RTCP pair).
    func testReservationKeepsItsFamily() throws {
        let harness = try TurnHarness()
        var rtp = try TurnTestClient(harness)
        let answer = try XCTUnwrap(rtp.allocate { $0.append(.evenPort, [0x80])
            $0.append(.requestedAddressFamily, [2, 0, 0, 0]) })
        let even = try XCTUnwrap(answer.xorAddress(.xorRelayedAddress))
        XCTAssertEqual(even.hostText, "::1")
        let token = try XCTUnwrap(answer.value(.reservationToken) { Array($0) })
        var rtcp = try TurnTestClient(harness)
        let odd = try XCTUnwrap(rtcp.allocate { $0.append(.reservationToken, token) }?.xorAddress(.xorRelayedAddress))
        XCTAssertEqual(odd.hostText, "::1")
        XCTAssertEqual(odd.port, even.port + 1)
    }

    /// A reserved port is bound from the moment it is reserved: another process cannot take it
    /// before the token comes back (on a busy host that made coturn's client fail with 508).
    func testReservedPortIsHeldUntilRedeemed() throws {
        let harness = try TurnHarness()
        var rtp = try TurnTestClient(harness)
        let answer = try XCTUnwrap(rtp.allocate { $0.append(.evenPort, [0x80])
            $0.append(.requestedAddressFamily, [2, 0, 0, 0]) })
        var reserved = try XCTUnwrap(answer.xorAddress(.xorRelayedAddress))
        reserved.port += 1
        XCTAssertThrowsError(try UDPSocket(binding: reserved), "the reserved port \(reserved) must already be bound")
        let token = try XCTUnwrap(answer.value(.reservationToken) { Array($0) })
        var rtcp = try TurnTestClient(harness)
        XCTAssertEqual(try rtcp.allocate { $0.append(.reservationToken, token) }?.xorAddress(.xorRelayedAddress), reserved)
    }
}
