import Foundation
import Glibc
import NetAddress
import TestSupport
import XCTest
@testable import DatagramEngine

/// A socket bound to a wildcard address learns, per datagram, which of the host's addresses it
/// reached (IP_PKTINFO / IPV6_PKTINFO), and an answer enqueued from that address leaves from
/// it, as the client's own plain socket sees: a client drops an answer from another address.
/// 127.0.0.1 and 127.0.0.2 are both this host's (all of 127/8 is), and the route back to a
/// client on 127.0.0.1 prefers 127.0.0.1, so without the control message an answer to what
/// reached 127.0.0.2 would come from 127.0.0.1. A socket bound to one address is left as it was.
final class LocalAddressTests: XCTestCase {
    static let first = Endpoint(host: "127.0.0.1", port: 0)!
    static let second = Endpoint(host: "127.0.0.2", port: 0)!

    func testAnswersLeaveFromTheAddressEachDatagramReachedOnEveryBackend() throws {
        for backend in ConformanceTests.backends {
            for gso in [false, true] where backend != .perPacket || !gso {
                try echo(backend, gso: gso, server: Loopback.wildcardV4, client: Loopback.v4, reached: [Self.first, Self.second])
            }
        }
    }

    /// On a dual-stack socket an IPv4 client's datagram arrives IPv4-mapped; the answer goes
    /// back with IP_PKTINFO (as its TOS byte goes with IP_TOS), which the kernel's IPv4 path
    /// reads on an IPv6 socket.
    func testADualStackSocketAnswersIPv4ClientsFromTheAddressTheyReached() throws {
        try IPv6Loopback.require()
        for backend in ConformanceTests.backends {
            try echo(backend, gso: backend != .perPacket, server: Loopback.dualStack, client: Loopback.v4, reached: [Self.first, Self.second])
        }
    }

    /// ::1 is the one IPv6 address loopback has: this checks that IPV6_PKTINFO is read and that
    /// the kernel takes the one the engine writes (a malformed one is refused, EINVAL).
    func testIPv6AnswersLeaveFromTheAddressReached() throws {
        try IPv6Loopback.require()
        for backend in ConformanceTests.backends {
            try echo(backend, gso: backend != .perPacket, server: Loopback.dualStack, client: Loopback.v6,
                     reached: [Endpoint(host: "::1", port: 0)!])
        }
    }

    /// A socket bound to one address gets no address with its datagrams, and sends no source
    /// address even when asked to: it answers from its own.
    func testASocketBoundToOneAddressIsLeftAsItWas() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            let server = try UDPSocket(binding: Self.first)
            let id = try engine.register(server)
            let client = try UDPSocket(binding: Loopback.v4)
            Loopback.send(from: client, to: server.localEndpoint, bytes: [7])
            var arrived: ReceivedDatagram?
            _ = Loopback.drain(engine, count: 1) { arrived = $0 }
            let datagram = try XCTUnwrap(arrived, "\(backend)")
            XCTAssertEqual(datagram.localAddress, Endpoint(high: 0, low: 0, port: 0), "\(backend): no IP_PKTINFO asked for")
            engine.enqueue(socket: id, to: datagram.source, from: Self.second, trafficClass: TrafficClass(dscp: 10, ecn: .ect0),
                           bytes: datagram.bytes)
            engine.flush()
            let reply = try XCTUnwrap(Loopback.receive(on: client), "\(backend): no answer")
            XCTAssertEqual(reply.source, server.localEndpoint, "\(backend): the bound address answers")
            XCTAssertEqual(reply.trafficClass, TrafficClass(dscp: 10, ecn: .ect0), "\(backend)")
            XCTAssertEqual(engine.counters.sendErrors.total, 0, "\(backend)")
        }
    }

    /// One client sends runs of equal datagrams to each address in turn; the engine answers each
    /// from the address it reached, all in one flush. Equal size, marking and destination would
    /// make them one GSO send but for the source: the runs must split there, and only there.
    private func echo(_ backend: Backend, gso: Bool, server local: Endpoint, client clientAddress: Endpoint, reached: [Endpoint],
                      file: StaticString = #filePath, line: UInt = #line) throws {
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: gso))
        let server = try UDPSocket(binding: local)
        let id = try engine.register(server)
        let client = try UDPSocket(binding: clientAddress)
        let runs = 3, perRun = 4
        var sent = 0
        for run in 0..<runs {
            for address in reached.indices {
                for _ in 0..<perRun {
                    let target = Endpoint(high: reached[address].high, low: reached[address].low, port: server.localEndpoint.port)
                    Loopback.send(from: client, to: target, bytes: [UInt8(address), UInt8(run)] + [UInt8](repeating: 9, count: 298))
                    sent += 1
                }
            }
        }
        let marking = TrafficClass(dscp: 46, ecn: .ect1)
        var wrongAddress = 0
        var got = 0, turns = 0
        let deadline = Date().addingTimeInterval(5)
        // A flush per receive: the received bytes the answers borrow last until the next one.
        while got < sent && Date() < deadline {
            let count = engine.receive(timeoutMilliseconds: 50)
            guard count > 0 else { continue }
            turns += 1
            for index in 0..<count {
                let datagram = engine.received(index)
                if datagram.localAddress != reached[Int(datagram.bytes[0])] { wrongAddress += 1 }
                engine.enqueue(socket: id, to: datagram.source, from: datagram.localAddress, trafficClass: marking, bytes: datagram.bytes)
            }
            engine.flush()
            got += count
        }
        let context = "\(backend) gso \(gso) \(local)"
        XCTAssertEqual(got, sent, context, file: file, line: line)
        XCTAssertEqual(wrongAddress, 0, "\(context): the local address each datagram reached", file: file, line: line)
        var answers = 0
        while let reply = Loopback.receive(on: client, seconds: 1) {
            answers += 1
            let expected = reached[Int(reply.bytes[0])]
            XCTAssertEqual(reply.source, Endpoint(high: expected.high, low: expected.low, port: server.localEndpoint.port),
                           "\(context): an answer left from another address than its request reached", file: file, line: line)
            XCTAssertEqual(reply.trafficClass, marking, "\(context): the TOS byte beside the address", file: file, line: line)
            if answers == sent { break }
        }
        XCTAssertEqual(answers, sent, context, file: file, line: line)
        XCTAssertEqual(engine.counters.sendErrors.total, 0, context, file: file, line: line)
        if gso && engine.gsoEnabled(id) && reached.count > 1 && turns == 1 {
            // Each run of one address went as one send: as many sends as runs, no more.
            XCTAssertEqual(engine.counters.gsoSends, UInt64(runs * reached.count), "\(context): GSO runs split by source only",
                           file: file, line: line)
        }
    }
}
