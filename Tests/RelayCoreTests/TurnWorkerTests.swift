import DatagramEngine
@testable import RelayCore
import NetAddress
import STUN
import Synchronization
import XCTest

/// TURN inside the relay's workers: every worker binds the TURN listener with SO_REUSEPORT,
/// a client's allocation lives on the worker its 5-tuple reaches, and data flows through the
/// worker's engine batch. Clients reach each other through their relayed addresses wherever
/// their allocations live (the kernel's hash decides; six clients on two workers usually
/// land on both, but the test does not depend on it).
final class TurnWorkerTests: XCTestCase {
    func testClientsAcrossWorkersSharingOneListenerPort() throws {
        let harness = try TurnHarness(workers: 2)
        var clients: [TurnTestClient] = []
        var relayed: [Endpoint] = []
        for index in 0..<6 {
            var client = try TurnTestClient(harness)
            if index % 2 == 1 {
                client.username = "bob"
                client.password = "hunter2"
            }
            relayed.append(try XCTUnwrap(client.allocate()?.xorAddress(.xorRelayedAddress)))
            clients.append(client)
        }
        let perWorker = harness.workers.map { $0.turnTable!.activeAllocations }
        XCTAssertEqual(perWorker.reduce(0, +), 6)

        // Each client talks to the next one's relayed address, through a channel.
        for index in clients.indices {
            let next = (index + 1) % clients.count
            XCTAssertTrue(try XCTUnwrap(clients[index].bind(0x4000, relayed[next])).isSuccess)
            XCTAssertTrue(try XCTUnwrap(clients[next].permit(relayed[index])).isSuccess)
        }
        for index in clients.indices { clients[index].send(channelData(0x4000, [UInt8(index)])) }
        for index in clients.indices {
            let previous = (index + clients.count - 1) % clients.count
            let arrived = try StunMessage(bytes: XCTUnwrap(harness.next(on: clients[index].socket)).bytes)
            XCTAssertEqual(try arrived.xorAddress(.xorPeerAddress), relayed[previous])
            XCTAssertEqual(try arrived.value(.data) { Array($0) }, [UInt8(previous)])
        }
        // The control plane's listing: every allocation, with its channel and counters.
        let listed = Mutex<[TurnAllocationInfo]>([])
        for worker in harness.workers {
            worker.execute(.turnAllocations(limit: 10) { infos in listed.withLock { $0 += infos } })
        }
        let infos = listed.withLock { $0 }
        XCTAssertEqual(Set(infos.flatMap(\.relayed)), Set(relayed))
        XCTAssertTrue(infos.allSatisfy { $0.channels.count == 1 && $0.counters.channelDataIn == 1 && $0.counters.indicationsOut == 1 })
        XCTAssertEqual(infos.filter { $0.username == "bob" }.count, 3)
        // The workers publish TURN figures with their stats.
        for worker in harness.workers { worker.publish() }
        var total = TurnStats()
        for worker in harness.workers { total.merge(worker.shared.published.withLock { $0 }.turn) }
        XCTAssertEqual(total.allocations, 6)
        XCTAssertEqual(total.channels, 6)
        XCTAssertEqual(total.counters.channelDataToPeers, 6)
        XCTAssertEqual(total.counters.indicationsToClients, 6)
    }
}
