import Glibc
import NetAddress
import XCTest
@testable import DatagramEngine

/// "A change of marking never splits or flushes a batch": 64 equal datagrams to one peer, each
/// with its own TOS byte, leave in one system call (one sendmmsg, one io_uring submit) even with
/// GSO on (which must not merge them), and a recvmmsg receiver takes them in one batch with
/// every marking intact.
final class MixedMarkingBatchTests: XCTestCase {
    func testMixedMarkingsInOneTurnLeaveInOneBatch() throws {
        for backend in [Backend.mmsg, .uring] {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true))
            let sender = try engine.register(UDPSocket(binding: Loopback.v4))
            // The receiving side is a separate mmsg engine, so its receive batches are its own.
            let receiving = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg))
            let receiver = try UDPSocket(binding: Loopback.v4)
            _ = try receiving.register(receiver)
            engine.receive(timeoutMilliseconds: 0)  // settles the io_uring set-up calls before counting
            let marks = (0..<64).map { TrafficClass(rawValue: UInt8($0 * 4 + $0 % 4)) }  // 64 DSCPs, all four ECNs
            let before = engine.counters
            [UInt8](repeating: 5, count: 100).withUnsafeBytes { raw in
                for mark in marks { engine.enqueue(socket: sender, to: receiver.localEndpoint, trafficClass: mark, bytes: raw) }
                engine.flush()
            }
            XCTAssertEqual(engine.counters.syscalls - before.syscalls, 1, "\(backend): one system call for the whole turn")
            XCTAssertEqual(engine.counters.datagramsOut - before.datagramsOut, 64, "\(backend)")
            XCTAssertEqual(engine.counters.gsoSends - before.gsoSends, 0, "\(backend): no two markings merged")

            // Loopback delivers during the send, so all 64 wait in the queue: one receive takes all.
            var seen: [TrafficClass] = []
            let got = receiving.receive(timeoutMilliseconds: 5_000)
            for index in 0..<got { seen.append(receiving.received(index).trafficClass) }
            XCTAssertEqual(seen, marks, "\(backend): one receive batch, every marking as sent")
            XCTAssertEqual(receiving.counters.receiveBatches, 1, "\(backend)")
            XCTAssertEqual(receiving.counters.batchSizes[6], 1, "\(backend): the batch held 33 to 64 datagrams")
        }
    }
}
