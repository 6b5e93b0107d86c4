import DatagramEngine
import MallocCounter
@testable import RelayCore
import NetAddress
import STUN
import XCTest

/// Policing and CE marking stay on the allocation-free packet path: a worker whose session
/// legs have both limits, under an egress cap, and a TURN table with a bandwidth quota under
/// one, forward ECT datagrams far past their limits (so every branch runs: pass, mark, drop)
/// while every allocation is counted.
final class PolicingAllocationTests: XCTestCase {
    func testSessionAndRuleLimitsAndTheEgressCapAllocateNothing() throws {
        let peers = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false))
        let a = try peers.register(UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!))
        let b = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!)
        let bID = try peers.register(b)
        let upstream = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!)
        let upstreamEndpoint = upstream.localEndpoint
        _ = try peers.register(upstream)
        let listen = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint
        var settings = RelaySettings(ports: 43600...43699, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.engine = EngineConfiguration(backend: .mmsg)
        settings.rules = [ForwardRule(listen: listen, upstream: upstreamEndpoint)]
        settings.egress = EgressBucket(rate: 2_000_000, largestDatagram: 1500)
        let worker = try Worker(shared: WorkerShared(index: 0), settings: settings, ruleShares: settings.rules.map(RuleShared.init))
        var request = SessionRequest()
        request.maxPacketsPerSecond = 2000
        request.maxBytesPerSecond = 300_000
        guard case .success(let session) = worker.sessions.create(request, id: "s-policed") else { return XCTFail("no session") }

        let payload = [UInt8](repeating: 7, count: 200)
        let codepoints: [TrafficClass] = [TrafficClass(dscp: 46, ecn: .ect1), TrafficClass(dscp: 34, ecn: .ect0),
                                          TrafficClass(dscp: 0, ecn: .notECT)]
        func exchange(rounds: Int) {
            payload.withUnsafeBytes { bytes in
                for round in 0..<rounds {
                    for index in 0..<48 {
                        let marking = codepoints[(round + index) % 3]
                        peers.enqueue(socket: a, to: session.legs[0].address, trafficClass: marking, bytes: bytes)
                        peers.enqueue(socket: bID, to: listen, trafficClass: marking, bytes: bytes)
                    }
                    peers.flush()
                    for _ in 0..<4 {
                        worker.turn(timeoutMilliseconds: 1)
                        _ = peers.receive(timeoutMilliseconds: 0)
                    }
                }
            }
        }
        payload.withUnsafeBytes { peers.enqueue(socket: bID, to: session.legs[1].address, trafficClass: codepoints[0], bytes: $0) }
        peers.flush()
        exchange(rounds: 20)  // warm-up: latches, the first client, lazily sized tables
        worker.housekeeping()
        worker.publish()
        malloc_counter_start()
        exchange(rounds: 400)
        let allocations = malloc_counter_stop()
        worker.publish()
        let stats = worker.shared.published.withLock { $0 }
        XCTAssertGreaterThan(stats.ceMarks[.rateLimit], 0, "no leg marked")
        XCTAssertGreaterThan(stats.ceMarks[.egress], 0, "the egress cap marked nothing")
        XCTAssertGreaterThan(stats.drops[.rateLimit], 0)
        XCTAssertGreaterThan(stats.drops[.egress], 0)
        XCTAssertEqual(allocations, 0, "allocations while policing and marking")
        worker.shutDown()
    }

    func testTurnQuotaAndTheEgressCapAllocateNothing() throws {
        let harness = try TurnHarness(egress: EgressBucket(rate: 1_000_000, largestDatagram: 1500)) {
            $0.bandwidthPerAllocation = 200_000
        }
        var client = try TurnTestClient(harness)
        let relayed = try XCTUnwrap(client.allocate()?.xorAddress(.xorRelayedAddress))
        let (peer, peerAddress) = try harness.socket()
        XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, peerAddress)).isSuccess)
        let payload = [UInt8](repeating: 7, count: 400)
        let framed = channelData(0x4000, payload)
        let codepoints: [TrafficClass] = [TrafficClass(dscp: 46, ecn: .ect1), TrafficClass(dscp: 0, ecn: .ect0)]
        let sockets = harness.sockets
        func exchange(rounds: Int) {
            framed.withUnsafeBytes { framed in
                payload.withUnsafeBytes { payload in
                    for round in 0..<rounds {
                        for index in 0..<16 {
                            let marking = codepoints[(round + index) % 2]
                            sockets.enqueue(socket: client.socket, to: harness.listener, trafficClass: marking, bytes: framed)
                            sockets.enqueue(socket: peer, to: relayed, trafficClass: marking, bytes: payload)
                        }
                        sockets.flush()
                        for _ in 0..<4 {
                            harness.now += 1_000_000  // a millisecond a turn: the buckets refill
                            harness.table.clock.now = harness.now
                            let count = harness.relay.receive(timeoutMilliseconds: 1)
                            for index in 0..<count { harness.route(harness.relay.received(index)) }
                            harness.relay.flush()
                            harness.table.flushed()
                            harness.table.packets.egress.endTurn()
                            _ = sockets.receive(timeoutMilliseconds: 0)
                        }
                    }
                }
            }
        }
        // Warm up until every path the measurement takes has run once: a path's first run may
        // instantiate generic type metadata (a one-time runtime cache; a debug build's first
        // egress drop touches an InlineArray type for the first time, 6 allocations), which is
        // not the packet path allocating. Ten rounds did not always reach an egress drop.
        var warmUp = 0
        repeat {
            exchange(rounds: 10)
            warmUp += 10
            let seen = harness.table.counters
            if seen.ceMarks[.rateLimit] > 0 && seen.ceMarks[.egress] > 0
                && seen[drop: .bandwidth] > 0 && seen[drop: .egress] > 0 { break }
        } while warmUp < 300
        malloc_counter_start()
        exchange(rounds: 300)
        let allocations = malloc_counter_stop()
        let counters = harness.table.counters
        XCTAssertGreaterThan(counters.ceMarks[.rateLimit], 0)
        XCTAssertGreaterThan(counters.ceMarks[.egress], 0)
        XCTAssertGreaterThan(counters[drop: .bandwidth] + counters[drop: .egress], 0)
        XCTAssertEqual(allocations, 0, "allocations while policing and marking TURN datagrams")
    }
}
