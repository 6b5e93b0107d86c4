import DatagramEngine
import FastPath
@testable import RelayCore
import NetAddress
import Synchronization
import XCTest

/// Session pairs and the kernel fast path, on the in-memory tables and offload (table logic:
/// what is installed when, and what user space does with what the kernel reports).
final class SessionOffloadTests: XCTestCase {
    let peerA = Endpoint(host: "192.0.2.10", port: 5000)!
    let peerB = Endpoint(host: "198.51.100.20", port: 6000)!

    /// A session "s1" whose two legs peerA and peerB have latched (so its pair is offloaded when
    /// it can be), on fresh tables; the key of peerA's arrivals at leg 0.
    private func latched(_ offload: InMemoryOffload, configure: (inout SessionRequest) -> Void = { _ in })
        throws -> (tables: InMemoryTables, legs: [Endpoint], forward: FlowKey) {
        let tables = try InMemoryTables(offload: offload)
        let legs = try pair(tables, configure: configure)
        tables.send([1], from: peerA, to: legs[0])
        tables.send([1], from: peerB, to: legs[1])
        return (tables, legs, FlowKey(source: peerA, destination: legs[0]))
    }

    private func pair(_ tables: InMemoryTables, configure: (inout SessionRequest) -> Void = { _ in }) throws -> [Endpoint] {
        var request = SessionRequest()
        configure(&request)
        let info = try tables.sessions.create(request, id: "s1").get()
        return info.legs.map(\.address)
    }

    func testBothLegsLatchedPutsEachDirectionInTheKernel() throws {
        let offload = InMemoryOffload()
        let tables = try InMemoryTables(offload: offload)
        let legs = try pair(tables)
        tables.send([1, 2, 3], from: peerA, to: legs[0])
        XCTAssertTrue(offload.entries.isEmpty, "one latched leg has nowhere to send: nothing to offload")
        tables.send([4, 5, 6], from: peerB, to: legs[1])
        XCTAssertEqual(offload.entries.count, 2)
        let forward = try XCTUnwrap(offload.entries[FlowKey(source: peerA, destination: legs[0])])
        XCTAssertEqual(forward.source, legs[1])
        XCTAssertEqual(forward.destination, peerB)
        XCTAssertEqual(forward.kind, .plain)
        XCTAssertEqual(forward.idleTimeout, 60_000_000_000, "the session's idle timeout, enforced by the kernel too")
        XCTAssertNil(forward.egressInterface, "the kernel's routes find the way")
        XCTAssertFalse(forward.credited)
        let backward = try XCTUnwrap(offload.entries[FlowKey(source: peerB, destination: legs[1])])
        XCTAssertEqual(backward.source, legs[0])
        XCTAssertEqual(backward.destination, peerA)
    }

    func testThePolicyTravelsWithTheEntry() throws {
        let offload = InMemoryOffload()
        let tables = try InMemoryTables(offload: offload)
        let legs = try pair(tables) { $0.policy = MarkingPolicy(dscp: .class, ecn: .clear, serviceClass: .interactiveVideo) }
        tables.send([1], from: peerA, to: legs[0])
        tables.send([1], from: peerB, to: legs[1])
        let entry = try XCTUnwrap(offload.entries[FlowKey(source: peerA, destination: legs[0])])
        XCTAssertEqual(entry.dscp, .value(ServiceClass.interactiveVideo.dscp))
        XCTAssertEqual(entry.ecn, .clear)
    }

    func testFanOutStaysInUserSpace() throws {
        let offload = InMemoryOffload()
        let tables = try InMemoryTables(offload: offload)
        let three = try tables.sessions.create({ var r = SessionRequest(); r.legs = 3; return r }(), id: "fan").get().legs.map(\.address)
        tables.send([1], from: peerA, to: three[0])
        tables.send([1], from: peerB, to: three[1])
        tables.send([1], from: Endpoint(host: "203.0.113.5", port: 7000)!, to: three[2])
        XCTAssertTrue(offload.entries.isEmpty)
    }

    /// A packet limit is forwarded on packet credit: what its bucket passes before ECT(1)
    /// marking starts, set aside in it; what the kernel leaves comes back at the next round.
    func testAPacketLimitForwardsOnPacketCredit() throws {
        let offload = InMemoryOffload()
        let (tables, _, forward) = try latched(offload) { $0.maxPacketsPerSecond = 400 }
        XCTAssertEqual(offload.entries[forward]?.packetCredited, true)
        XCTAssertEqual(offload.entries[forward]?.credited, false, "no byte limit, no egress cap: no byte credit")
        // A quarter of the 400-datagram burst, less the datagram user space passed.
        XCTAssertEqual(Double(offload.packetCredit[forward] ?? 0), 99, accuracy: 1)
        offload.spend(forward, 0, packets: 60)
        tables.creditRound()
        XCTAssertEqual(Double(offload.packetCredit[forward] ?? 0), 39, accuracy: 1, "what the kernel sent stays spent")
        XCTAssertTrue(tables.sessions.delete("s1"))
        XCTAssertTrue(offload.packetCredit.isEmpty)
    }

    /// Under the egress cap a pair is forwarded on credit; a leg's own byte limit bounds its
    /// share further.
    func testUnderTheEgressCapEachDirectionGetsAShareAndItsOwnLimitsCredit() throws {
        let offload = InMemoryOffload()
        let tables = try InMemoryTables(offload: offload) { $0.egress = EgressBucket(rate: 1_000_000, largestDatagram: 1_500) }
        let legs = try pair(tables) { $0.maxBytesPerSecond = 20_000 }
        tables.send([1], from: peerA, to: legs[0])
        tables.send([1], from: peerB, to: legs[1])
        let forward = FlowKey(source: peerA, destination: legs[0])
        XCTAssertEqual(offload.entries[forward]?.credited, true)
        tables.creditRound()
        // The cap's share (12,500) is more than the leg's own credit (a quarter of 20,000 less
        // the byte already sent): the smaller wins.
        XCTAssertEqual(Double(offload.credit[forward] ?? 0), 5_000 - 1, accuracy: 2)
    }

    func testTheKernelsTrafficKeepsTheLatchAndTheSession() throws {
        let offload = InMemoryOffload()
        let tables = try InMemoryTables(offload: offload)
        let legs = try pair(tables)
        tables.send([1], from: peerA, to: legs[0])
        tables.send([1], from: peerB, to: legs[1])
        let forward = FlowKey(source: peerA, destination: legs[0])
        // User space hears nothing more: the kernel carries the pair.
        tables.advance(seconds: 30)
        offload.forwardedAt[forward] = tables.clock.now
        var rebound = peerA
        rebound.port = 5001
        tables.send([1], from: rebound, to: legs[0])
        XCTAssertNotNil(offload.entries[forward], "a new source while the kernel carries the latched one is refused (hijack)")
        XCTAssertEqual(tables.sessions.legs[0].latched, peerA)

        tables.advance(seconds: 50)
        tables.sessions.expire()
        XCTAssertEqual(tables.sessions.count, 1, "kernel traffic 50 s ago keeps a session of 60 s alive")
        tables.advance(seconds: 11)
        tables.sessions.expire()
        XCTAssertEqual(tables.sessions.count, 0)
        XCTAssertTrue(offload.entries.isEmpty, "the session's entries go with it")
    }

    func testARelatchRewritesTheEntries() throws {
        let offload = InMemoryOffload()
        let tables = try InMemoryTables(offload: offload)
        let legs = try pair(tables)
        tables.send([1], from: peerA, to: legs[0])
        tables.send([1], from: peerB, to: legs[1])
        tables.advance(seconds: 6)
        var rebound = peerA
        rebound.port = 5001
        tables.send([1], from: rebound, to: legs[0])
        XCTAssertNil(offload.entries[FlowKey(source: peerA, destination: legs[0])])
        XCTAssertEqual(offload.entries[FlowKey(source: rebound, destination: legs[0])]?.destination, peerB)
        XCTAssertEqual(offload.entries[FlowKey(source: peerB, destination: legs[1])]?.destination, rebound)
    }

    func testTheKernelsCountsAreInTheDescriptionAndTheRecord() throws {
        let offload = InMemoryOffload()
        let tables = try InMemoryTables(offload: offload)
        let records = Mutex<[AccountingRecord]>([])
        tables.sessions.accounting = { record in records.withLock { $0.append(record) } }
        let legs = try pair(tables)
        tables.send([1, 2], from: peerA, to: legs[0])
        tables.send([1, 2], from: peerB, to: legs[1])
        offload.counts[FlowKey(source: peerA, destination: legs[0])] = InMemoryOffload.carried(10, bytes: 100, ecn: 1)
        let described = try XCTUnwrap(tables.sessions.describe("s1"))
        XCTAssertEqual(described.legs[0].counters.packetsIn, 11)
        XCTAssertEqual(described.legs[0].counters.ecnIn[1], 10)
        XCTAssertEqual(described.legs[1].counters.packetsOut, 10, "the first datagram had no latched leg to go to")
        XCTAssertEqual(described.legs[1].counters.bytesOut, 1_000)
        XCTAssertTrue(tables.sessions.delete("s1"))
        XCTAssertTrue(offload.entries.isEmpty)
        let record = try XCTUnwrap(records.withLock { $0.first })
        XCTAssertEqual(record.sides[0].packetsIn, 11, "what the kernel carried is in the session's record")
    }

    func testARefusedInstallLeavesThePairInUserSpace() throws {
        let offload = InMemoryOffload()
        offload.refusing = true
        let tables = try InMemoryTables(offload: offload)
        let legs = try pair(tables)
        tables.send([1], from: peerA, to: legs[0])
        tables.send([1], from: peerB, to: legs[1])
        XCTAssertEqual(tables.send([9], from: peerA, to: legs[0]).map(\.destination), [peerB])
        XCTAssertTrue(tables.sessions.offloaded.isEmpty)
    }

    func testAByteLimitForwardsOnCredit() throws {
        let offload = InMemoryOffload()
        let (tables, _, forward) = try latched(offload) { $0.maxBytesPerSecond = 40_000 }
        XCTAssertEqual(offload.entries[forward]?.credited, true)
        // One datagram of a byte passed the user-space bucket before the pair went to the kernel.
        XCTAssertEqual(Double(offload.credit[forward] ?? 0), 10_000 - 1, accuracy: 1)
        offload.spend(forward, 9_000)
        tables.creditRound()
        XCTAssertEqual(Double(offload.credit[forward] ?? 0), 1_000 - 1, accuracy: 1)
        XCTAssertTrue(tables.sessions.delete("s1"))
        XCTAssertTrue(offload.credit.isEmpty)
    }
}
