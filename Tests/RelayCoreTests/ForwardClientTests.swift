import DatagramEngine
@testable import RelayCore
import NetAddress
import XCTest

/// A forward rule keeps one upstream socket per client source. The worker remembers the last
/// client per rule so a run of datagrams hashes its source once: runs from two clients in turn,
/// and a client removed and coming back, must still each leave through their own socket.
final class ForwardClientTests: XCTestCase {
    func testRunsFromTwoClientsAndAReturningClientLeaveThroughTheirOwnSockets() throws {
        let loopback = Endpoint(host: "127.0.0.1", port: 0)!
        let peers = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false, gro: false))
        let a = try UDPSocket(binding: loopback)
        let b = try UDPSocket(binding: loopback)
        let upstream = try UDPSocket(binding: loopback)
        let aID = try peers.register(a)
        let bID = try peers.register(b)
        let upstreamID = try peers.register(upstream)
        let listen = try UDPSocket(binding: loopback).localEndpoint
        var settings = RelaySettings(ports: 43600...43699, relayAddress: loopback)
        settings.engine = EngineConfiguration(backend: .mmsg, gso: false, gro: false)
        settings.rules = [ForwardRule(listen: listen, upstream: upstream.localEndpoint)]
        let worker = try Worker(shared: WorkerShared(index: 0), settings: settings, ruleShares: settings.rules.map(RuleShared.init))
        defer { worker.shutDown() }

        let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
        defer { payload.deallocate() }
        /// Sends a run of `count` datagrams from `client` (its payload byte names it) and returns
        /// the relay sockets they reached the upstream from.
        func run(from client: SocketID, named name: UInt8, count: Int) -> Set<Endpoint> {
            payload[0] = name
            for _ in 0..<count {
                peers.enqueue(socket: client, to: listen, trafficClass: TrafficClass(rawValue: 0), bytes: UnsafeRawBufferPointer(payload))
            }
            peers.flush()
            var sources = Set<Endpoint>()
            var arrived = 0
            var spins = 0
            while arrived < count && spins < 400 {
                worker.turn(timeoutMilliseconds: 5)
                let received = peers.receive(timeoutMilliseconds: 5)
                for index in 0..<received {
                    let datagram = peers.received(index)
                    guard datagram.socket == upstreamID else { continue }
                    XCTAssertEqual(datagram.bytes.first, name, "a datagram of another client in this run")
                    sources.insert(datagram.source)
                    arrived += 1
                }
                spins += 1
            }
            XCTAssertEqual(arrived, count, "run of client \(Character(UnicodeScalar(name)))")
            return sources
        }

        let first = run(from: aID, named: UInt8(ascii: "a"), count: 8)
        let second = run(from: bID, named: UInt8(ascii: "b"), count: 8)
        XCTAssertEqual(first.count, 1)
        XCTAssertEqual(second.count, 1)
        XCTAssertNotEqual(first, second, "two clients share an upstream socket")
        XCTAssertEqual(run(from: aID, named: UInt8(ascii: "a"), count: 8), first)
        XCTAssertEqual(run(from: bID, named: UInt8(ascii: "b"), count: 8), second)

        // b sent last; removing it (as expiry does) frees its index while it is the one
        // remembered. Its next datagrams make a new client, and a keeps its own.
        let bIndex = try XCTUnwrap(worker.forwardRules.clientsByRule[0][b.localEndpoint])
        worker.forwardRules.removeClient(bIndex, .idle)
        let returned = run(from: bID, named: UInt8(ascii: "b"), count: 8)
        XCTAssertEqual(returned.count, 1)
        XCTAssertNotEqual(returned, first, "the returning client left through another client's socket")
        XCTAssertEqual(run(from: aID, named: UInt8(ascii: "a"), count: 8), first)
        XCTAssertEqual(worker.forwardRules.clientCount, 2)
    }
}
