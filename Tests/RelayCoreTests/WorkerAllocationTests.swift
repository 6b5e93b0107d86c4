import DatagramEngine
import MallocCounter
@testable import RelayCore
import NetAddress
import XCTest

/// The relay's packet path allocates nothing per datagram: a worker runs on this thread (no
/// thread of its own, so the thread-local malloc counter sees all of its work) and forwards
/// 20,000 datagrams through a session pair and a forward rule while every allocation is counted;
/// again with receive timestamps on and backlog thresholds of zero, so every datagram is marked
/// for its wait (the stamp read and converted, the sojourn judged, the mark counted).
final class WorkerAllocationTests: XCTestCase {
    func testForwardingAllocatesNothingOnEveryBackend() throws {
        for backend in [Backend.perPacket, .mmsg, .uring] {
            for timestamps in [false, true] { try forwarding(backend, timestamps: timestamps) }
        }
    }

    private func forwarding(_ backend: Backend, timestamps: Bool) throws {
        let peers = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false))
        let a = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!)
        let b = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!)
        let upstreamSocket = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!)
        let aID = try peers.register(a)
        let bID = try peers.register(b)
        let upstreamID = try peers.register(upstreamSocket)

        let listen = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint
        var settings = RelaySettings(ports: 43500...43599, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.engine = EngineConfiguration(backend: backend, receiveTimestamps: timestamps)
        settings.backlogThresholds = BacklogThresholds(l4sMicroseconds: 0, classicMicroseconds: 0)
        settings.rules = [ForwardRule(listen: listen, upstream: upstreamSocket.localEndpoint)]
        let worker = try Worker(shared: WorkerShared(index: 0), settings: settings, ruleShares: settings.rules.map(RuleShared.init))
        guard case .success(let session) = worker.sessions.create(SessionRequest(), id: "s-test") else {
            return XCTFail("no session")
        }
        let legA = session.legs[0].address
        let legB = session.legs[1].address

        let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 200, alignment: 8)
        defer { payload.deallocate() }
        payload.initializeMemory(as: UInt8.self, repeating: 7)
        let bytes = UnsafeRawBufferPointer(payload)
        let marking = TrafficClass(dscp: 46, ecn: .ect1)

        /// Sends `rounds` x (A->B through the session, client->upstream and back through the
        /// rule) and runs the worker and the peers until all have arrived.
        func exchange(rounds: Int) -> Int {
            var arrived = 0
            for _ in 0..<rounds {
                for _ in 0..<16 {
                    peers.enqueue(socket: aID, to: legA, trafficClass: marking, bytes: bytes)
                    peers.enqueue(socket: bID, to: listen, trafficClass: marking, bytes: bytes)
                }
                peers.flush()
                var spins = 0
                var expected = 32
                while expected > 0 && spins < 200 {
                    worker.turn(timeoutMilliseconds: 5)
                    let count = peers.receive(timeoutMilliseconds: 5)
                    for index in 0..<count {
                        let datagram = peers.received(index)
                        if datagram.socket == upstreamID {
                            // The upstream answers the client through the rule.
                            peers.enqueue(socket: upstreamID, to: datagram.source, trafficClass: marking, bytes: bytes)
                        } else {
                            expected -= 1
                            arrived += 1
                        }
                    }
                    peers.flush()
                    spins += 1
                }
            }
            return arrived
        }

        peers.enqueue(socket: bID, to: legB, trafficClass: marking, bytes: bytes)  // latch leg B
        peers.flush()
        _ = exchange(rounds: 20)  // warm-up: the first client, latches, lazily sized tables
        malloc_counter_start()
        let arrived = exchange(rounds: 625)
        let allocations = malloc_counter_stop()
        XCTAssertEqual(arrived, 625 * 32, "\(backend)")
        XCTAssertEqual(allocations, 0, "\(backend), timestamps \(timestamps): allocations while forwarding \(arrived) datagrams")
        worker.publish()
        let marks = worker.shared.published.withLock { $0 }.ceMarks[.backlog]
        // Each round marks its 16 datagrams on the session and 32 through the rule, both ways.
        XCTAssertEqual(marks, timestamps ? UInt64(645 * 48 + 1) : 0, "\(backend): every datagram marked for its wait (the latch too), or none")
        worker.shutDown()
    }
}
