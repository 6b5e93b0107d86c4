import Glibc
import NetAddress
import SystemSupport
import TestSupport
import XCTest
@testable import DatagramEngine

/// Receive timestamps (`EngineConfiguration.receiveTimestamps`) on every backend: each datagram
/// carries the kernel's receive time on the monotonic clock, between its send and its receive;
/// a datagram left waiting in its socket's queue shows the wait; off, there is none.
final class ReceiveTimestampTests: XCTestCase {
    /// Lets the realtime-to-monotonic conversion and the two clocks' reads differ a little.
    static let slack: UInt64 = 1_000_000

    func testEveryBackendStampsEveryDatagramBetweenItsSendAndItsReceive() throws {
        for backend in ConformanceTests.backends {
            var locals = [Loopback.v4, Loopback.dualStack]
            if IPv6Loopback.isAvailable { locals.append(Loopback.v6) }
            for local in locals {
                let (engine, socket) = try receiver(backend, local: local)
                let sender = try UDPSocket(binding: local.isIPv4 ? Loopback.v4 : Loopback.v6)
                let destination = Endpoint(host: local.isIPv4 ? "127.0.0.1" : "::1", port: socket.localEndpoint.port)!
                XCTAssertTrue(stampsOnArrival(engine, from: sender, to: destination), "\(backend) \(local): the kernel never stamped on arrival")
                let before = MonotonicClock.now()
                for index in 0..<20 { Loopback.send(from: sender, to: destination, bytes: [UInt8(index)]) }
                var stamps: [UInt64] = []
                XCTAssertEqual(Loopback.drain(engine, count: 20) { stamps.append($0.receivedAt) }, 20, "\(backend) \(local)")
                let after = MonotonicClock.now()
                for stamp in stamps {
                    XCTAssertGreaterThanOrEqual(stamp + Self.slack, before, "\(backend) \(local): stamped before it was sent")
                    XCTAssertLessThanOrEqual(stamp, after + Self.slack, "\(backend) \(local): stamped after it was received")
                }
                XCTAssertEqual(stamps, stamps.sorted(), "\(backend) \(local): one socket's datagrams in the order they came")
            }
        }
    }

    func testTheWaitInTheSocketQueueShows() throws {
        for backend in ConformanceTests.backends {
            let (engine, socket) = try receiver(backend, local: Loopback.v4)
            let sender = try UDPSocket(binding: Loopback.v4)
            XCTAssertTrue(stampsOnArrival(engine, from: sender, to: socket.localEndpoint), "\(backend): the kernel never stamped on arrival")
            engine.receive(timeoutMilliseconds: 0)  // arms io_uring's receive: the datagrams wait in the queue, not in a buffer
            for index in 0..<8 { Loopback.send(from: sender, to: socket.localEndpoint, bytes: [UInt8(index)]) }
            usleep(30_000)
            var waits: [UInt64] = []
            while waits.count < 8 {
                let count = engine.receive(timeoutMilliseconds: 100)
                guard count > 0 else { break }
                let now = MonotonicClock.now()
                for index in 0..<count { waits.append(now - engine.received(index).receivedAt) }
            }
            XCTAssertEqual(waits.count, 8, "\(backend)")
            for wait in waits {
                XCTAssertGreaterThanOrEqual(wait + Self.slack, 30_000_000, "\(backend): waited 30 ms in the queue")
                XCTAssertLessThan(wait, 1_000_000_000, "\(backend)")
            }
        }
    }

    /// Waits (a second at most) until the kernel stamps a datagram when it arrives. The first
    /// socket on a host to ask for stamps turns stamping on through a deferred work item
    /// (net_enable_timestamp); until that has run, a datagram is stamped when it is read, and
    /// one that waited in the queue shows no wait. Seen here: alone, this test failed every time.
    private func stampsOnArrival(_ engine: DatagramEngine, from sender: UDPSocket, to destination: Endpoint) -> Bool {
        for _ in 0..<200 {
            engine.receive(timeoutMilliseconds: 0)
            Loopback.send(from: sender, to: destination, bytes: [0])
            usleep(5_000)
            var wait: UInt64 = 0
            guard Loopback.drain(engine, count: 1, { wait = MonotonicClock.now() &- $0.receivedAt }) == 1 else { return false }
            if wait >= 4_000_000 && wait < 1_000_000_000 { return true }
        }
        return false
    }

    func testOffByDefaultNoDatagramIsStamped() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            XCTAssertFalse(engine.configuration.receiveTimestamps)
            let socket = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(socket)
            let sender = try UDPSocket(binding: Loopback.v4)
            for index in 0..<4 { Loopback.send(from: sender, to: socket.localEndpoint, bytes: [UInt8(index)]) }
            var stamps: [UInt64] = []
            XCTAssertEqual(Loopback.drain(engine, count: 4) { stamps.append($0.receivedAt) }, 4)
            XCTAssertEqual(stamps, [0, 0, 0, 0], "\(backend)")
        }
    }

    private func receiver(_ backend: Backend, local: Endpoint) throws -> (DatagramEngine, UDPSocket) {
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, receiveTimestamps: true))
        let socket = try UDPSocket(binding: local)
        _ = try engine.register(socket)
        return (engine, socket)
    }
}
