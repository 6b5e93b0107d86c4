import Glibc
import NetAddress
import XCTest
@testable import DatagramEngine

/// io_uring only: many sockets share one ring of provided buffers. When a burst reaches more
/// sockets than there are buffers, most multishot receives end with ENOBUFS and their
/// datagrams wait in the kernel. Re-armed all at once on every turn, each found the ring empty
/// again and ended again: 2,000 TURN peers echoing at once against 256 GRO buffers cost 2.6
/// restarts per datagram received. Re-armed a few at a time as buffers come back, each starved
/// socket restarts about once per burst.
final class RingStarvationTests: XCTestCase {
    func testABurstToMoreSocketsThanBuffersRestartsEachStarvedSocketAboutOnce() throws {
        var configuration = EngineConfiguration(backend: .uring)
        configuration.batchSize = 4  // a turn takes 4 datagrams ...
        configuration.uringBuffers = 8  // ... from 8 buffers shared by 64 sockets
        configuration.gro = false
        let engine = try DatagramEngine(configuration: configuration)
        XCTAssertEqual(configuration.uringBufferCount, 8)
        let sockets = try (0..<64).map { _ in try UDPSocket(binding: Loopback.v4) }
        let addresses = sockets.map(\.localEndpoint)
        for socket in sockets { _ = try engine.register(socket) }
        engine.receive(timeoutMilliseconds: 1)  // arms every receive

        let peer = try UDPSocket(binding: Loopback.v4)
        let sink = try UDPSocket(binding: Loopback.v4)  // not registered: only a destination
        for round in 0..<3 {
            for address in addresses { Loopback.send(from: peer, to: address, bytes: [UInt8(round)]) }
            var total = 0
            var turns = 0
            while total < addresses.count && turns < 1_000 {
                // A relay's turn: forward what came, then flush. The flush reaps while it
                // waits for its sends and keeps the receive completions it meets for the next
                // turn, which takes `batchSize` of them: buffers stay out for several turns.
                let count = engine.receive(timeoutMilliseconds: 1_000)
                for index in 0..<count {
                    let datagram = engine.received(index)
                    engine.enqueue(socket: datagram.socket, to: sink.localEndpoint, trafficClass: datagram.trafficClass, bytes: datagram.bytes)
                }
                engine.flush()
                total += count
                turns += 1
            }
            XCTAssertEqual(total, addresses.count, "round \(round): every datagram of the burst arrives")
        }
        // 3 bursts of 64 against 8 buffers: at most 56 starve per burst, so about 170 restarts
        // if each starved socket restarts once; re-armed all at once every turn, 692.
        XCTAssertGreaterThan(engine.counters.receiveRestarts, 0, "the case under test: receives ran out of buffers")
        XCTAssertLessThan(engine.counters.receiveRestarts, 2 * 3 * 64, "starved sockets restart about once per burst")
    }
}
