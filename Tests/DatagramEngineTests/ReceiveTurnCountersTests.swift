import Glibc
import NetAddress
import XCTest
@testable import DatagramEngine

/// The counters `make demo` explains each engine's saving with: datagrams per receive call
/// (`receiveBatches`, `batchSizes`) against datagrams per turn (`receiveTurns`, `turnSizes`).
/// Three datagrams wait on each of two sockets before one turn: perPacket reads them in six
/// calls, mmsg in two (one recvmmsg per socket), uring in one reap; every backend's turn holds
/// all six.
final class ReceiveTurnCountersTests: XCTestCase {
    func testReceiveCallsAndTurnsAcrossTwoSockets() throws {
        for backend in [Backend.perPacket, .mmsg, .uring] {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            let first = try UDPSocket(binding: Loopback.v4), second = try UDPSocket(binding: Loopback.v4)
            let peer = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(first)
            _ = try engine.register(second)
            engine.receive(timeoutMilliseconds: 0)  // arms io_uring's receives before anything is sent
            let before = engine.counters
            for target in [first, second] {
                for byte in UInt8(0)..<3 { Loopback.send(from: peer, to: target.localEndpoint, bytes: [byte]) }
            }
            XCTAssertEqual(Loopback.drain(engine, count: 6), 6, "\(backend)")
            let after = engine.counters
            let calls = after.receiveBatches - before.receiveBatches
            let turns = Int(after.receiveTurns - before.receiveTurns)
            var turnHistogram: UInt64 = 0, callHistogram: UInt64 = 0
            for bucket in 0..<9 {
                turnHistogram += after.turnSizes[bucket] - before.turnSizes[bucket]
                callHistogram += after.batchSizes[bucket] - before.batchSizes[bucket]
            }
            XCTAssertEqual(turnHistogram, UInt64(turns), "\(backend): one histogram entry per turn")
            XCTAssertEqual(callHistogram, calls, "\(backend): one histogram entry per receive call")
            // engine.backend: the one that runs (a refused io_uring falls back to mmsg, and says so).
            switch engine.backend {
            case .perPacket, .mmsg:
                // Loopback queued all six before the turn: one epoll_wait reports both sockets.
                XCTAssertEqual(turns, 1, "\(backend)")
                XCTAssertEqual(after.turnSizes[3] - before.turnSizes[3], 1, "\(backend): the turn held 5 to 8 datagrams")
                XCTAssertEqual(calls, engine.backend == .mmsg ? 2 : 6, "\(backend): receive calls that returned datagrams")
            default:
                // io_uring: a turn's reap is its one receive call, whatever the sockets.
                XCTAssertEqual(calls, UInt64(turns), "\(backend)")
                XCTAssertGreaterThanOrEqual(turns, 1, "\(backend)")
            }
        }
    }
}
