import DatagramEngine
import MallocCounter
@testable import RelayCore
import NetAddress
import STUN
import SystemSupport
import XCTest

/// TURN's packet path allocates nothing per datagram: ChannelData and Send indications from
/// the client, and peers' datagrams going back as ChannelData and as Data indications, run
/// through the table on this thread while every allocation is counted.
final class TurnAllocationFreeTests: XCTestCase {
    func testTurnDataPathAllocatesNothingOnEveryBackend() throws {
        for backend in [Backend.perPacket, .mmsg, .uring] {
            let harness = try TurnHarness(backend: backend)
            try assertNoAllocations(harness, "\(backend)") {
                let count = harness.relay.receive(timeoutMilliseconds: 5)
                for index in 0..<count { harness.route(harness.relay.received(index)) }
                harness.relay.flush()
                harness.table.flushed()
            }
            XCTAssertEqual(harness.table.counters[drop: .noPermission], 0)
        }
    }

    /// On a listener bound to 0.0.0.0 every datagram brings the address it reached, which the
    /// client's 5-tuple keeps and every answer and relayed datagram to it names: nothing of it
    /// allocates, and every datagram still finds its allocation.
    func testTurnDataPathOnAWildcardListenerAllocatesNothing() throws {
        for backend in [Backend.perPacket, .mmsg, .uring] {
            let harness = try TurnHarness(backend: backend, listenOn: "0.0.0.0")
            try assertNoAllocations(harness, "\(backend) on 0.0.0.0") {
                let count = harness.relay.receive(timeoutMilliseconds: 5)
                for index in 0..<count { harness.route(harness.relay.received(index)) }
                harness.relay.flush()
                harness.table.flushed()
            }
            XCTAssertEqual(harness.table.counters[drop: .noAllocation], 0, "\(backend)")
            XCTAssertEqual(harness.table.counters[drop: .noPermission], 0, "\(backend)")
        }
    }

    /// With receive timestamps on and backlog thresholds of zero, so that every datagram is
    /// marked for its wait: the stamp, the judgement and the count allocate nothing either.
    func testTurnDataPathWithTimestampsAllocatesNothing() throws {
        for backend in [Backend.perPacket, .mmsg, .uring] {
            let harness = try TurnHarness(backend: backend, timestamps: true) {
                $0.backlogThresholds = BacklogThresholds(l4sMicroseconds: 0, classicMicroseconds: 0)
            }
            try assertNoAllocations(harness, "\(backend) with timestamps") {
                let count = harness.relay.receive(timeoutMilliseconds: 5)
                harness.table.clock.now = MonotonicClock.now()
                for index in 0..<count { harness.route(harness.relay.received(index)) }
                harness.relay.flush()
                harness.table.flushed()
            }
            XCTAssertEqual(harness.table.counters.ceMarks[.backlog], 310 * 32, "\(backend): every datagram marked")
        }
    }

    /// The same through a whole worker: its dispatcher, its turn (flush, housekeeping, stats).
    func testTurnThroughAWorkerAllocatesNothing() throws {
        let harness = try TurnHarness(workers: 1)
        let worker = harness.workers[0]
        // Housekeeping and stats run every turn or so; their first run instantiates generic
        // type metadata once (a runtime cache), which the warm-up must include.
        try assertNoAllocations(harness, "worker", warmUp: {
            worker.housekeeping()
            worker.publish()
        }) { worker.turn(timeoutMilliseconds: 5) }
        XCTAssertEqual(worker.turnTable?.counters[drop: .noPermission], 0)
    }

    private func assertNoAllocations(_ harness: TurnHarness, _ name: String, warmUp: () -> Void = {},
                                     relayTurn: () -> Void) throws {
        do {
            var client = try TurnTestClient(harness)
            let relayed = try XCTUnwrap(client.allocate()?.xorAddress(.xorRelayedAddress))
            let (channelPeer, channelPeerAddress) = try harness.socket()
            let (indicationPeer, indicationPeerAddress) = try harness.socket("127.0.0.2")
            XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, channelPeerAddress)).isSuccess)
            XCTAssertTrue(try XCTUnwrap(client.permit(indicationPeerAddress)).isSuccess)

            let payload = [UInt8](repeating: 7, count: 160)
            let framed = channelData(0x4000, payload)
            let indication = sendIndication(indicationPeerAddress, payload)
            let marking = TrafficClass(dscp: 46, ecn: .ect1)
            let sockets = harness.sockets

            func exchange(rounds: Int) -> Int {
                var arrived = 0
                framed.withUnsafeBytes { framed in
                    indication.withUnsafeBytes { indication in
                        payload.withUnsafeBytes { payload in
                            for _ in 0..<rounds {
                                for _ in 0..<8 {
                                    sockets.enqueue(socket: client.socket, to: harness.listener, trafficClass: marking, bytes: framed)
                                    sockets.enqueue(socket: client.socket, to: harness.listener, trafficClass: marking, bytes: indication)
                                    sockets.enqueue(socket: channelPeer, to: relayed, trafficClass: marking, bytes: payload)
                                    sockets.enqueue(socket: indicationPeer, to: relayed, trafficClass: marking, bytes: payload)
                                }
                                sockets.flush()
                                var expected = 32
                                var spins = 0
                                while expected > 0 && spins < 400 {
                                    relayTurn()
                                    let back = sockets.receive(timeoutMilliseconds: 5)
                                    expected -= back
                                    arrived += back
                                    spins += 1
                                }
                            }
                        }
                    }
                }
                return arrived
            }

            _ = exchange(rounds: 10)  // warm-up: lazily sized engine tables
            warmUp()
            malloc_counter_start()
            let arrived = exchange(rounds: 300)
            let allocations = malloc_counter_stop()
            XCTAssertEqual(arrived, 300 * 32, name)
            XCTAssertEqual(allocations, 0, "\(name): allocations while relaying \(arrived) TURN datagrams")
        }
    }
}
