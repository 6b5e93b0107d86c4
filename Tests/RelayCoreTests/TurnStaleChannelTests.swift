import DatagramEngine
@testable import RelayCore
import STUN
import TestPorts
import XCTest

/// A channel's peer is checked once, at ChannelBind. When that peer was another allocation's
/// relayed address and the allocation ends, its port goes back to the pool: ChannelData and
/// Send must not reach whatever binds the port next (a Send is refused by the peer policy
/// first, which checks every Send's port; ChannelData by the stale-port check).
final class TurnStaleChannelTests: XCTestCase {
    func testAChannelToAnEndedAllocationNoLongerReachesItsPort() throws {
        let ports = try PortBlock()
        var (harness, client, other) = try TurnHarness.withOwnPorts(ports)
        XCTAssertNotNil(try XCTUnwrap(client.allocate()?.xorAddress(.xorRelayedAddress)))
        let otherRelayed = try XCTUnwrap(other.allocate()?.xorAddress(.xorRelayedAddress))
        XCTAssertTrue(try XCTUnwrap(client.permit(otherRelayed)).isSuccess)
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, otherRelayed)).isSuccess)

        // The other allocation ends; its port is free, and something else of this host binds it.
        XCTAssertTrue(try XCTUnwrap(other.ask(.refresh) { $0.append(.lifetime, uint32: 0) }).isSuccess)
        let squatter = try harness.sockets.register(UDPSocket(binding: otherRelayed))

        client.send(channelData(0x4000, [1]))
        client.send(sendIndication(otherRelayed, [2]))
        XCTAssertEqual(harness.settle(on: squatter), 0, "nothing reaches the port's new owner")
        XCTAssertEqual(harness.table.counters[drop: .staleRelayedPeer], 1, "the channel")
        XCTAssertEqual(harness.table.counters[drop: .forbiddenPeer], 1, "a Send's port is checked by the policy first")
    }
}
