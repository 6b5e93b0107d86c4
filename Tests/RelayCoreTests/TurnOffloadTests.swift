import DatagramEngine
import FastPath
@testable import RelayCore
import NetAddress
import STUN
import Synchronization
import XCTest

/// TURN channels and the kernel fast path, on the in-memory harness and offload (table logic:
/// what is installed when, with which rewrite and lifetime, and what becomes of its counts).
final class TurnOffloadTests: XCTestCase {
    private struct Bound {
        var harness: InMemoryTurnHarness
        var client: TurnTestClient
        var clientAddress: Endpoint
        var relayed: Endpoint
        var peer: SocketID
        var peerAddress: Endpoint
    }

    private func bound(_ offload: InMemoryOffload, configure: (inout TurnSettings) -> Void = { _ in }) throws -> Bound {
        let harness = try InMemoryTurnHarness(offload: offload, configure: configure)
        var client = try TurnTestClient(harness)
        let allocated = try XCTUnwrap(client.allocate())
        let relayed = try XCTUnwrap(allocated.xorAddress(.xorRelayedAddress))
        let clientAddress = try XCTUnwrap(allocated.xorAddress(.xorMappedAddress))
        let (peer, peerAddress) = try harness.socket("127.0.0.1")
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4001, peerAddress)).isSuccess)
        return Bound(harness: harness, client: client, clientAddress: clientAddress, relayed: relayed, peer: peer, peerAddress: peerAddress)
    }

    func testAChannelBindPutsTheChannelInTheKernelBothWays() throws {
        let offload = InMemoryOffload()
        let channel = try bound(offload)
        let toPeer = try XCTUnwrap(offload.entries[FlowKey(source: channel.clientAddress, destination: channel.harness.listener, channel: 0x4001)])
        XCTAssertEqual(toPeer.kind, .stripChannel(0x4001))
        XCTAssertEqual(toPeer.source, channel.relayed)
        XCTAssertEqual(toPeer.destination, channel.peerAddress)
        let toClient = try XCTUnwrap(offload.entries[FlowKey(source: channel.peerAddress, destination: channel.relayed)])
        XCTAssertEqual(toClient.kind, .addChannel(0x4001))
        XCTAssertEqual(toClient.source, channel.harness.listener)
        XCTAssertEqual(toClient.destination, channel.clientAddress)
        // The permission (300 s) ends before the channel (600 s): the entry stops with it, an
        // end it shares with the allocation's other channels to that address.
        XCTAssertEqual(toPeer.expiresAt, channel.harness.now + 600 * 1_000_000_000, "its own end: the channel's")
        XCTAssertEqual(toPeer.sharedEnds.count, 2, "the permission's end and the allocation's")
        XCTAssertEqual(offload.end(of: FlowKey(source: channel.clientAddress, destination: channel.harness.listener, channel: 0x4001)),
                       channel.harness.now + 300 * 1_000_000_000)
        XCTAssertEqual(toClient.sharedEnds, toPeer.sharedEnds)
        XCTAssertNil(toPeer.idleTimeout, "a channel ends at fixed times, not when idle")
        XCTAssertFalse(toPeer.credited)
        XCTAssertEqual(offload.entries.count, 2)
    }

    /// Each request writes only what it changed, and a moved end is one store into a slot,
    /// never a new install: a permission for one peer's address moves that permission's end
    /// (which every channel to the address shares) and nothing else, a Refresh moves the
    /// allocation's, a ChannelBind of a new channel installs its two entries and nothing else.
    func testARequestWritesOnlyWhatItChanged() throws {
        let offload = InMemoryOffload()
        var channel = try bound(offload)
        let (_, otherPeer) = try channel.harness.socket("127.0.0.2")
        XCTAssertTrue(try XCTUnwrap(channel.client.bind(0x4002, otherPeer)).isSuccess)
        let events = offload.events.count
        let moves = offload.expiryMoves
        channel.harness.advance(seconds: 100)

        XCTAssertTrue(try XCTUnwrap(channel.client.permit(otherPeer)).isSuccess)
        XCTAssertEqual(offload.events.count, events, "a permission installs or removes nothing")
        XCTAssertEqual(offload.expiryMoves - moves, 1, "one store: the other address's permission end")
        let otherToPeer = FlowKey(source: channel.clientAddress, destination: channel.harness.listener, channel: 0x4002)
        XCTAssertEqual(offload.end(of: otherToPeer), channel.harness.now + 300 * 1_000_000_000)
        let firstToPeer = FlowKey(source: channel.clientAddress, destination: channel.harness.listener, channel: 0x4001)
        XCTAssertEqual(offload.end(of: firstToPeer), channel.harness.now + 200 * 1_000_000_000, "untouched")

        XCTAssertTrue(try XCTUnwrap(channel.client.ask(.refresh) { $0.append(.lifetime, uint32: 600) }).isSuccess)
        XCTAssertEqual(offload.expiryMoves - moves, 2, "one store: the allocation's end")
        XCTAssertEqual(offload.events.count, events)

        let (_, thirdPeer) = try channel.harness.socket("127.0.0.3")
        XCTAssertTrue(try XCTUnwrap(channel.client.bind(0x4003, thirdPeer)).isSuccess)
        XCTAssertEqual(offload.events.count, events + 2, "a new channel: its two entries")
        XCTAssertEqual(offload.sharedEnds.count, 4, "the allocation's end and three permissions'")
    }

    func testInstallsComeBeforeTheAnswerIsQueued() throws {
        let offload = InMemoryOffload()
        let harness = try InMemoryTurnHarness(offload: offload)
        var client = try TurnTestClient(harness)
        XCTAssertNotNil(client.allocate())
        let (_, peerAddress) = try harness.socket("127.0.0.1")
        let queued = Mutex<[Int]>([])
        offload.onInstall = { _ in queued.withLock { $0.append(harness.queuedCount) } }
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4002, peerAddress)).isSuccess)
        XCTAssertEqual(queued.withLock { $0 }, [0, 0], "both entries were in before the ChannelBind success was queued")
    }

    func testAPermissionRefreshMovesTheEndAndARefreshOfZeroTakesThemOut() throws {
        let offload = InMemoryOffload()
        var channel = try bound(offload)
        let records = Mutex<[AccountingRecord]>([])
        channel.harness.table.accounting = { record in records.withLock { $0.append(record) } }
        let toPeer = FlowKey(source: channel.clientAddress, destination: channel.harness.listener, channel: 0x4001)
        let toClient = FlowKey(source: channel.peerAddress, destination: channel.relayed)
        channel.harness.advance(seconds: 100)
        XCTAssertTrue(try XCTUnwrap(channel.client.permit(channel.peerAddress)).isSuccess)
        XCTAssertEqual(offload.end(of: toPeer), channel.harness.now + 300 * 1_000_000_000)

        offload.counts[toPeer] = InMemoryOffload.carried(10, bytes: 100, ecn: 2)
        offload.counts[toClient] = InMemoryOffload.carried(5, bytes: 200, ecn: 1)
        let listed = try XCTUnwrap(channel.harness.table.describeAllocations(limit: 10, worker: 0).first)
        XCTAssertEqual(listed.counters.channelDataIn, 10)
        XCTAssertEqual(listed.counters.bytesToClient, 1_000)
        XCTAssertEqual(listed.counters.ecnFromPeers[1], 5)

        XCTAssertTrue(try XCTUnwrap(channel.client.ask(.refresh) { $0.append(.lifetime, uint32: 0) }).isSuccess)
        XCTAssertTrue(offload.entries.isEmpty)
        let record = try XCTUnwrap(records.withLock { $0.first })
        let sides = Dictionary(uniqueKeysWithValues: record.sides.map { ($0.name, $0) })
        XCTAssertEqual(sides["client"]?.packetsIn, 10, "the kernel's ChannelData is in the allocation's record")
        XCTAssertEqual(sides["client"]?.packetsOut, 5)
    }

    func testEntriesGoWhenThePermissionEnds() throws {
        let offload = InMemoryOffload()
        let channel = try bound(offload)
        channel.harness.advance(seconds: 299)
        channel.harness.table.expire()
        XCTAssertEqual(offload.entries.count, 2)
        channel.harness.advance(seconds: 2)
        channel.harness.table.expire()
        XCTAssertTrue(offload.entries.isEmpty)
    }

    func testAQuotaForwardsOnTheCreditItsBucketAllows() throws {
        let offload = InMemoryOffload()
        let channel = try bound(offload) { $0.bandwidthPerAllocation = 100_000 }
        let toPeer = FlowKey(source: channel.clientAddress, destination: channel.harness.listener, channel: 0x4001)
        let toClient = FlowKey(source: channel.peerAddress, destination: channel.relayed)
        XCTAssertEqual(offload.entries[toPeer]?.credited, true)
        XCTAssertEqual(offload.entries[toClient]?.credited, true)
        // A full bucket passes a quarter of its burst before ECT(1) marking starts; the two
        // directions share it.
        XCTAssertEqual(Double(offload.credit[toPeer] ?? 0), 12_500, accuracy: 1)
        XCTAssertEqual(offload.credit[toPeer], offload.credit[toClient])
        offload.spend(toPeer, 10_000)
        channel.harness.creditRound()
        // 15,000 left to grant (10,000 of the 25,000 were spent), shared out by what each way
        // spent last round, each with a floor of a thirty-second of it: traffic one way gets
        // nearly all.
        let shares = (Double(offload.credit[toPeer] ?? 0), Double(offload.credit[toClient] ?? 0))
        XCTAssertEqual(shares.0 + shares.1, 15_000, accuracy: 4, "what the kernel spent stays spent")
        XCTAssertEqual(shares.0, 15_000 * 10_468 / 10_936, accuracy: 4)
        offload.spend(toPeer, offload.credit[toPeer] ?? 0)
        offload.spend(toClient, offload.credit[toClient] ?? 0)
        channel.harness.creditRound()
        XCTAssertEqual(offload.credit[toPeer], 0, "at the marking threshold the kernel gets nothing")
        XCTAssertEqual(offload.credit[toClient], 0)
        // What the kernel hands back now meets the user-space policer at that threshold.
        var marked = 0
        for _ in 0..<40 {
            channel.client.send(channelData(0x4001, [UInt8](repeating: 0, count: 1_000)), trafficClass: TrafficClass(dscp: 0, ecn: .ect1))
            if channel.harness.next(on: channel.peer)?.trafficClass.ecn == .ce { marked += 1 }
        }
        XCTAssertGreaterThan(marked, 0)
        channel.harness.advance(seconds: 1)
        channel.harness.creditRound()
        XCTAssertEqual(Double((offload.credit[toPeer] ?? 0) + (offload.credit[toClient] ?? 0)), 25_000, accuracy: 4,
                       "a second later the bucket is full again")
    }

    func testARefusedInstallStillRelays() throws {
        let offload = InMemoryOffload()
        offload.refusing = true
        let channel = try bound(offload)
        XCTAssertTrue(offload.entries.isEmpty)
        channel.client.send(channelData(0x4001, [1, 2, 3]))
        XCTAssertEqual(channel.harness.next(on: channel.peer)?.bytes, [1, 2, 3])
    }
}
