import DatagramEngine
import NetAddress
@testable import RelayCore
import STUN
import XCTest

/// Permissions (300 s), channels (600 s) and allocations (their lifetime) expire on the
/// table's clock, which the test moves: nothing sleeps.
final class TurnExpiryTests: XCTestCase {
    func testPermissionsChannelsAndAllocationsExpire() throws {
        let harness = try TurnHarness()
        var client = try TurnTestClient(harness)
        let relayed = try XCTUnwrap(client.allocate { $0.append(.lifetime, uint32: 1200) }?.xorAddress(.xorRelayedAddress))
        let (peer, peerAddress) = try harness.socket()
        // Permissions are per IP address: the channel's peer on another one.
        let (channelPeer, channelPeerAddress) = try harness.socket("127.0.0.2")
        XCTAssertTrue(try XCTUnwrap(client.permit(peerAddress)).isSuccess)
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, channelPeerAddress)).isSuccess)
        XCTAssertEqual(harness.table.activePermissions, 2)
        XCTAssertEqual(harness.table.activeChannels, 1)

        // At 299 s the permission still works.
        harness.advance(seconds: 299)
        harness.table.expire()
        harness.send([1], from: peer, to: relayed)
        XCTAssertNotNil(harness.next(on: client.socket))

        // Past 300 s: the permission is gone, the peer's datagram dropped.
        harness.advance(seconds: 2)
        harness.table.expire()
        XCTAssertEqual(harness.table.activePermissions, 0, "the channel's permission (300 s) too")
        harness.send([2], from: peer, to: relayed)
        XCTAssertEqual(harness.settle(on: client.socket), 0)
        XCTAssertEqual(harness.table.counters[drop: .noPermission], 1)
        // The channel outlives its permission but cannot carry data without one.
        client.send(channelData(0x4000, [3]))
        XCTAssertEqual(harness.settle(on: channelPeer), 0)
        XCTAssertEqual(harness.table.activeChannels, 1)

        // Past 600 s the channel is gone; ChannelData on it is dropped as unbound.
        harness.advance(seconds: 300)
        harness.table.expire()
        XCTAssertEqual(harness.table.activeChannels, 0)
        client.send(channelData(0x4000, [4]))
        XCTAssertEqual(harness.settle(on: channelPeer), 0)
        XCTAssertEqual(harness.table.counters[drop: .noChannel], 1)

        // Past the 1200 s lifetime the allocation closes and its port returns to the pool.
        harness.advance(seconds: 600)
        harness.table.expire()
        XCTAssertEqual(harness.table.activeAllocations, 0)
        XCTAssertEqual(harness.table.counters.allocationsExpired, 1)
        XCTAssertFalse(harness.pool.isHeld(relayed.port))
    }

    func testRefreshExtendsAndUnclaimedReservationsReturn() throws {
        let harness = try TurnHarness()
        var client = try TurnTestClient(harness)
        let answer = try XCTUnwrap(client.allocate { $0.append(.evenPort, [0x80]) })
        let port = try XCTUnwrap(answer.xorAddress(.xorRelayedAddress)).port
        XCTAssertTrue(harness.pool.isHeld(port + 1), "reserved for the token")
        harness.advance(seconds: 31)
        harness.table.expire()
        XCTAssertFalse(harness.pool.isHeld(port + 1), "the reservation lapsed")

        harness.advance(seconds: 500)
        XCTAssertTrue(try XCTUnwrap(client.ask(.refresh)).isSuccess)
        harness.advance(seconds: 500)
        harness.table.expire()
        XCTAssertEqual(harness.table.activeAllocations, 1, "the Refresh gave it 600 s more")
        harness.advance(seconds: 101)
        harness.table.expire()
        XCTAssertEqual(harness.table.activeAllocations, 0)
    }

    /// The counts the stats publish are kept as permissions and channels come and go; here
    /// they are checked against a walk over every allocation through refreshes and expiries
    /// at staggered times, with the expiry queue holding about one entry per allocation.
    func testCountsKeptAsTheyChangeEqualAWalkAndTheQueueStaysSmall() throws {
        let harness = try TurnHarness()
        var clients: [TurnTestClient] = []
        for index in 0..<6 {
            var client = index % 2 == 0 ? try TurnTestClient(harness) : try TurnTestClient.bob(harness)
            XCTAssertTrue(try XCTUnwrap(client.allocate { $0.append(.lifetime, uint32: UInt32(400 + 200 * index)) }).isSuccess)
            for peer in 0..<(index + 1) {
                let address = Endpoint(host: "127.0.\(index).\(peer + 1)", port: UInt16(5000 + peer))!
                XCTAssertTrue(try XCTUnwrap(client.permit(address)).isSuccess)
                if peer % 2 == 0 { XCTAssertTrue(try XCTUnwrap(client.bind(UInt16(0x4000 + peer), address)).isSuccess) }
            }
            clients.append(client)
        }
        func walked() -> (Int, Int) {
            var permissions = 0, channels = 0
            for allocation in harness.table.store.liveIndices.map({ harness.table.store[$0] }) {
                permissions += allocation.permissions.count
                channels += allocation.channels.count
            }
            return (permissions, channels)
        }
        XCTAssertEqual(harness.table.activePermissions, 21)
        XCTAssertEqual(harness.table.activeChannels, 12)
        for step in 0..<30 {
            harness.advance(seconds: 50)
            // Some clients keep a permission alive, one refreshes its allocation.
            if step % 3 == 0 { _ = clients[step % 6].permit(Endpoint(host: "127.0.\(step % 6).1", port: 5000)!) }
            if step == 4 { _ = clients[5].ask(.refresh) { $0.append(.lifetime, uint32: 1000) } }
            harness.table.expire()
            let (permissions, channels) = walked()
            XCTAssertEqual(harness.table.activePermissions, permissions, "step \(step)")
            XCTAssertEqual(harness.table.activeChannels, channels, "step \(step)")
            XCTAssertLessThanOrEqual(harness.table.store.scheduledCount, 2 * max(1, harness.table.activeAllocations), "step \(step)")
        }
        XCTAssertEqual(harness.table.activeAllocations, 0, "every allocation ended")
        XCTAssertEqual(harness.table.activePermissions, 0)
        XCTAssertEqual(harness.table.activeChannels, 0)
    }

    func testTheExpiryQueueGivesDeadlinesInOrder() {
        var queue = ExpiryQueue()
        var deadlines: [UInt64] = []
        var random = SystemRandomNumberGenerator()
        for index in 0..<500 {
            let deadline = UInt64.random(in: 1...10_000, using: &random)
            deadlines.append(deadline)
            queue.push(deadline, allocation: Int32(index))
        }
        XCTAssertNil(queue.popDue(now: 0))
        var popped: [UInt64] = []
        while let due = queue.popDue(now: 5_000) { popped.append(due.deadline) }
        XCTAssertEqual(popped, deadlines.filter { $0 <= 5_000 }.sorted())
        while let due = queue.popDue(now: .max) { popped.append(due.deadline) }
        XCTAssertEqual(popped, deadlines.sorted())
        XCTAssertEqual(queue.count, 0)
    }
}
