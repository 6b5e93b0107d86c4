import DatagramEngine
import NetAddress
@testable import RelayCore
import STUN
import Synchronization
import XCTest

/// The accounting record of an allocation that expires (the one way to end that the
/// executable's tests would need 10 minutes to see): handed over once, at expiry, with what the
/// allocation relayed and dropped. The table runs on real loopback sockets; its clock is moved.
final class TurnAccountingTests: XCTestCase {
    /// Records handed over, for the test's thread to read.
    final class Collected: Sendable {
        let records = Mutex<[AccountingRecord]>([])
        var all: [AccountingRecord] { records.withLock { $0 } }
    }

    func testAnExpiredAllocationHandsOverOneRecordWithItsCounters() throws {
        let harness = try TurnHarness()
        let collected = Collected()
        harness.table.accounting = { record in collected.records.withLock { $0.append(record) } }
        var client = try TurnTestClient(harness)
        let relayed = try XCTUnwrap(client.allocate { $0.append(.lifetime, uint32: 600) }?.xorAddress(.xorRelayedAddress))
        let (peer, peerAddress) = try harness.socket()
        XCTAssertTrue(try XCTUnwrap(client.permit(peerAddress)).isSuccess)
        harness.send([1, 2, 3], from: peer, to: relayed, trafficClass: TrafficClass(dscp: 0, ecn: .ect1))
        XCTAssertNotNil(harness.next(on: client.socket))
        let (stranger, _) = try harness.socket("127.0.0.2")
        harness.send([9], from: stranger, to: relayed)
        XCTAssertEqual(harness.settle(on: client.socket), 0)

        harness.advance(seconds: 599)
        harness.table.expire()
        XCTAssertTrue(collected.all.isEmpty, "a record before the allocation ended")
        harness.advance(seconds: 2)
        harness.table.expire()
        XCTAssertEqual(harness.table.activeAllocations, 0)
        let records = collected.all
        XCTAssertEqual(records.count, 1)
        let record = try XCTUnwrap(records.first)
        XCTAssertEqual(record.kind, .allocation)
        XCTAssertEqual(record.reason, .expired)
        XCTAssertEqual(record.id, "alice")
        XCTAssertEqual(record.transport, .udp)
        XCTAssertEqual(record.durationNanoseconds / 1_000_000_000, 601)
        XCTAssertEqual(record.sides.map(\.name), ["client", "peers"])
        XCTAssertEqual(record.sides[0].remote, client.address)
        XCTAssertEqual(record.sides[1].local, [relayed])
        XCTAssertEqual(record.sides[0].packetsOut, 1)
        XCTAssertEqual(record.sides[0].bytesOut, 3)
        XCTAssertEqual(record.sides[0].ecnOut, [0, 1, 0, 0])
        XCTAssertEqual(record.sides[1].packetsIn, 1)
        XCTAssertEqual(record.sides[1].ecnIn, [0, 1, 0, 0])
        XCTAssertEqual(record.sides[0].packetsIn, 0)
        XCTAssertEqual(record.drops.map(\.reason), ["no_permission"])
        XCTAssertEqual(record.drops.map(\.count), [1])
        // Nothing more once it is gone, not at shutdown either.
        harness.table.shutDown()
        XCTAssertEqual(collected.all.count, 1)
    }
}
