import DatagramEngine
import FastPath
@testable import RelayCore
import NetAddress
import Synchronization
import XCTest

/// Forward-rule clients and the kernel fast path, on the in-memory tables and offload (table
/// logic). The upstream is on loopback so that the route the relay asks for its source exists.
final class ForwardOffloadTests: XCTestCase {
    let listen = Endpoint(host: "127.0.0.1", port: 7000)!
    let upstream = Endpoint(host: "127.0.0.1", port: 9000)!
    let client = Endpoint(host: "127.0.0.1", port: 5555)!

    private func tables(_ offload: InMemoryOffload, idleSeconds: Int = 30) throws -> InMemoryTables {
        try InMemoryTables(relayAddress: "127.0.0.1", rules: [ForwardRule(listen: listen, upstream: upstream, idleTimeoutSeconds: idleSeconds)],
                           offload: offload)
    }

    func testAClientsFirstDatagramPutsItInTheKernelBothWays() throws {
        let offload = InMemoryOffload()
        let tables = try tables(offload)
        let sent = tables.send([1, 2, 3], from: client, to: listen)
        XCTAssertEqual(sent.map(\.destination), [upstream], "the first datagram itself goes through user space")
        let upstreamSocket = try XCTUnwrap(tables.engine.sockets[sent[0].socket]).local
        let up = try XCTUnwrap(offload.entries[FlowKey(source: client, destination: listen)])
        XCTAssertEqual(up.destination, upstream)
        XCTAssertEqual(up.source, Endpoint(host: "127.0.0.1", port: upstreamSocket.port)!)
        let down = try XCTUnwrap(offload.entries[FlowKey(source: upstream, destination: up.source)])
        XCTAssertEqual(down.source, listen)
        XCTAssertEqual(down.destination, client)
        XCTAssertEqual(up.idleTimeout, 30_000_000_000)
        XCTAssertEqual(down.idleTimeout, 30_000_000_000)
    }

    func testTheKernelsTrafficKeepsTheClientAndItsCountsReachTheRecord() throws {
        let offload = InMemoryOffload()
        let tables = try tables(offload)
        let records = Mutex<[AccountingRecord]>([])
        tables.forwardRules.accounting = { record in records.withLock { $0.append(record) } }
        tables.send([1, 2, 3], from: client, to: listen)
        let up = FlowKey(source: client, destination: listen)
        tables.advance(seconds: 25)
        offload.forwardedAt[up] = tables.clock.now
        offload.counts[up] = InMemoryOffload.carried(20, bytes: 50, ecn: 2)
        tables.advance(seconds: 25)
        tables.forwardRules.expireClients()
        XCTAssertEqual(tables.forwardRules.clientCount, 1, "heard through the kernel 25 s ago, idle timeout 30 s")
        tables.advance(seconds: 6)
        tables.forwardRules.expireClients()
        XCTAssertEqual(tables.forwardRules.clientCount, 0)
        XCTAssertTrue(offload.entries.isEmpty)
        let record = try XCTUnwrap(records.withLock { $0.first })
        let side = try XCTUnwrap(record.sides.first { $0.name == "client" })
        XCTAssertEqual(side.packetsIn, 21)
        XCTAssertEqual(side.bytesIn, 1_003)
        XCTAssertEqual(side.ecnIn[2], 20)
    }

    func testUserSpaceHearingTheClientAgainWritesTheEntriesAgain() throws {
        let offload = InMemoryOffload()
        let tables = try tables(offload)
        tables.send([1], from: client, to: listen)
        let installs = offload.events.count
        tables.forwardRules.expireClients()
        XCTAssertEqual(offload.events.count, installs, "nothing heard in user space since: nothing written")
        tables.advance(seconds: 1)
        tables.send([2], from: client, to: listen)  // handed back by the kernel, idle there
        tables.forwardRules.expireClients()
        XCTAssertEqual(offload.events.count, installs + 2)
    }

    /// Under the egress cap (1 MB/s: a burst of 100 ms, ECT(1) marking from a quarter of it in
    /// use) a client's entries share what the cap passes unmarked, and what they leave of it goes
    /// back to the cap at the next round.
    func testTheEgressCapSharesOutWhatItPassesUnmarked() throws {
        let offload = InMemoryOffload()
        let tables = try InMemoryTables(relayAddress: "127.0.0.1", rules: [ForwardRule(listen: listen, upstream: upstream)], offload: offload) {
            $0.egress = EgressBucket(rate: 1_000_000, largestDatagram: 1_500)
        }
        tables.send([1], from: client, to: listen)
        let up = FlowKey(source: client, destination: listen)
        let down = try XCTUnwrap(offload.entries.keys.first { $0 != up })
        XCTAssertEqual(offload.entries[up]?.credited, true)
        XCTAssertEqual(offload.entries[down]?.credited, true)
        XCTAssertEqual(offload.credit[up] ?? 0, 0, "nothing before the round")
        tables.creditRound()
        XCTAssertEqual(Double(offload.credit[up] ?? 0), 12_500, accuracy: 10, "half of 25 ms of the rate each (the thresholds go in steps of 1/65,536)")
        XCTAssertEqual(offload.credit[up], offload.credit[down])
        offload.spend(up, 10_000)
        tables.creditRound()
        XCTAssertEqual(Double(offload.credit[up] ?? 0), 7_500, accuracy: 10, "what the kernel spent stays spent")
        offload.spend(up, 7_500)
        offload.spend(down, 7_500)
        tables.creditRound()
        XCTAssertEqual(offload.credit[up], 0, "the cap is at its marking threshold: the user-space policer takes over")
        tables.advance(seconds: 1)
        tables.creditRound()
        XCTAssertEqual(Double(offload.credit[up] ?? 0), 12_500, accuracy: 10)
    }

    func testAReloadedIdleTimeoutRewritesTheEntries() throws {
        let offload = InMemoryOffload()
        let tables = try tables(offload, idleSeconds: 30)
        tables.send([1], from: client, to: listen)
        let installs = offload.events.count
        tables.forwardRules.rules[0].shared.idleTimeoutSeconds.store(5, ordering: .relaxed)
        tables.forwardRules.expireClients()
        XCTAssertEqual(offload.events.count, installs + 2, "both entries written again with the new timeout")
        XCTAssertEqual(tables.forwardRules.offloaded.values.first?.idleTimeout, 5_000_000_000)
    }
}
