import DatagramEngine
@testable import RelayCore
import NetAddress
import STUN
import XCTest

/// The packet path's shortcuts keep every behaviour: a channel's copy of its permission's
/// expiry follows the permission, an allocation with more channels than are scanned in place
/// finds each by number and by peer (also after expired ones were removed from the middle),
/// and the remembered last client never outlives its allocation.
final class TurnChannelLookupTests: XCTestCase {
    func testARenewedPermissionReopensItsChannelBothWays() throws {
        var (harness, client, relayed, peer, peerAddress) = try InMemoryTurnHarness.withChannel(0x4000)

        // Past the permission's 300 s the channel (600 s) carries nothing either way.
        harness.advance(seconds: 301)
        client.send(channelData(0x4000, [1]))
        harness.send([2], from: peer, to: relayed)
        XCTAssertEqual(harness.settle(on: peer), 0)
        XCTAssertEqual(harness.settle(on: client.socket), 0)
        XCTAssertEqual(harness.table.counters[drop: .noPermission], 2)

        // CreatePermission for the peer's address (not ChannelBind) opens the channel again.
        XCTAssertTrue(try XCTUnwrap(client.permit(peerAddress)).isSuccess)
        client.send(channelData(0x4000, [3]))
        XCTAssertEqual(harness.next(on: peer)?.bytes, [3])
        harness.send([4], from: peer, to: relayed)
        XCTAssertEqual(harness.next(on: client.socket)?.bytes, channelData(0x4000, [4]), "as ChannelData, not a Data indication")
    }

    func testManyChannelsFoundByNumberAndPeerAfterSomeExpire() throws {
        let harness = try InMemoryTurnHarness()
        var client = try TurnTestClient(harness)
        let relayed = try XCTUnwrap(client.allocate { $0.append(.lifetime, uint32: 3600) }?.xorAddress(.xorRelayedAddress))
        var peers: [(id: SocketID, address: Endpoint)] = []
        for _ in 0..<14 { peers.append(try harness.socket()) }
        // Four channels first, ten more 300 s later: 14 > ChannelTable.scanLimit, and 10 after
        // the first four expire (at 600 s) out of the front of the table.
        XCTAssertGreaterThan(10, ChannelTable.scanLimit)
        for index in 0..<4 { XCTAssertTrue(try XCTUnwrap(client.bind(0x4000 + UInt16(index), peers[index].address)).isSuccess) }
        harness.advance(seconds: 300)
        for index in 4..<14 { XCTAssertTrue(try XCTUnwrap(client.bind(0x4000 + UInt16(index), peers[index].address)).isSuccess) }
        harness.advance(seconds: 250)
        XCTAssertTrue(try XCTUnwrap(client.permit(peers[0].address)).isSuccess, "the one address's permission, to 850 s")
        harness.advance(seconds: 51)
        harness.table.expire()
        XCTAssertEqual(harness.table.activeChannels, 10)

        for index in 0..<14 {
            let number = 0x4000 + UInt16(index)
            client.send(channelData(number, [UInt8(index)]))
            harness.send([UInt8(100 + index)], from: peers[index].id, to: relayed)
            if index < 4 {
                XCTAssertEqual(harness.settle(on: peers[index].id), 0, "channel \(index) expired")
                // Its peer is still permitted: what it sends comes as a Data indication.
                let back = try XCTUnwrap(harness.next(on: client.socket))
                XCTAssertEqual(try StunMessage(bytes: back.bytes).method, .data)
            } else {
                XCTAssertEqual(harness.next(on: peers[index].id)?.bytes, [UInt8(index)], "channel \(index) to its own peer")
                XCTAssertEqual(harness.next(on: client.socket)?.bytes, channelData(number, [UInt8(100 + index)]),
                               "peer \(index) back on its own channel")
            }
        }
        XCTAssertEqual(harness.table.counters[drop: .noChannel], 4)
    }

    func testTheLastClientIsForgottenWithItsAllocation() throws {
        let harness = try InMemoryTurnHarness()
        var alice = try TurnTestClient(harness)
        var bob = try TurnTestClient.bob(harness)
        let (alicePeer, alicePeerAddress) = try harness.socket()
        let (bobPeer, bobPeerAddress) = try harness.socket()
        XCTAssertNotNil(try alice.allocate()?.xorAddress(.xorRelayedAddress))
        XCTAssertTrue(try XCTUnwrap(alice.bind(0x4000, alicePeerAddress)).isSuccess)
        alice.send(channelData(0x4000, [1]))
        XCTAssertEqual(harness.next(on: alicePeer)?.bytes, [1], "alice is now the last client")

        // Alice deletes her allocation; bob's takes its place in the table, same channel number.
        XCTAssertEqual(try XCTUnwrap(alice.ask(.refresh) { $0.append(.lifetime, uint32: 0) }).isSuccess, true)
        XCTAssertNotNil(try bob.allocate()?.xorAddress(.xorRelayedAddress))
        XCTAssertTrue(try XCTUnwrap(bob.bind(0x4000, bobPeerAddress)).isSuccess)
        XCTAssertEqual(harness.table.store.indexCount, 1, "bob's allocation took alice's index")

        alice.send(channelData(0x4000, [2]))
        XCTAssertEqual(harness.settle(on: bobPeer), 0, "alice's ChannelData must not use bob's allocation")
        XCTAssertEqual(harness.table.counters[drop: .noAllocation], 1)
        bob.send(channelData(0x4000, [3]))
        XCTAssertEqual(harness.next(on: bobPeer)?.bytes, [3])
    }
}
