import Glibc
import NetAddress
import XCTest
@testable import DatagramEngine

/// The control space of a receive holds every control message the kernel may send for one
/// datagram at once. The kernel writes the drop counter (SO_RXQ_OVFL, once the socket has ever
/// dropped) and the receive timestamp first, then UDP_GRO, then the TOS byte: a space too small
/// for all of them loses the TOS byte, silently (MSG_CTRUNC), and the datagram would be
/// forwarded with DSCP 0 and Not-ECT. Here a socket that has dropped datagrams receives a GRO
/// burst, on both batched backends, IPv4 and dual-stack, with and without receive timestamps,
/// and on sockets bound to a wildcard address with the local address each datagram reached
/// (IP_PKTINFO, and IPV6_PKTINFO too on a dual-stack socket) beside them all.
final class ControlSpaceTests: XCTestCase {
    func testTheTOSByteSurvivesBesideTheDropCounterAndGRO() throws {
        for backend in GROTests.backends {
            for local in [Loopback.v4, Loopback.wildcardV4, Loopback.dualStack] {
                try everyMessageAtOnce(backend, local: local)
            }
        }
    }

    func testTheTimestampFitsBesideThemAndAGROBufferSharesOne() throws {
        for backend in GROTests.backends {
            for local in [Loopback.v4, Loopback.wildcardV4, Loopback.dualStack] {
                try everyMessageAtOnce(backend, local: local, timestamps: true)
            }
        }
    }

    func everyMessageAtOnce(_ backend: Backend, local: Endpoint, timestamps: Bool = false,
                            file: StaticString = #filePath, line: UInt = #line) throws {
        var configuration = EngineConfiguration(backend: backend, gso: true, gro: true)
        configuration.receiveTimestamps = timestamps
        let engine = try DatagramEngine(configuration: configuration)
        // A small buffer, so that a flood overflows it and the socket's drop counter is set.
        let socket = try UDPSocket(binding: local, options: SocketOptions(receiveBufferBytes: 4096))
        let id = try engine.register(socket)
        XCTAssertTrue(engine.groEnabled(id), "\(backend)", file: file, line: line)
        let destination = Endpoint(host: "127.0.0.1", port: socket.localEndpoint.port)!
        let flooder = try UDPSocket(binding: Loopback.v4)
        for _ in 0..<200 { Loopback.send(from: flooder, to: destination, bytes: [UInt8](repeating: 1, count: 1000)) }
        _ = Loopback.drain(engine, count: 200, seconds: 0.3)

        let marking = TrafficClass(dscp: 46, ecn: .ect1)
        let sender = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: true, gro: false))
        let out = try sender.register(UDPSocket(binding: Loopback.v4))
        let payload = [UInt8](repeating: 2, count: 4 * 500)
        let before = engine.counters.groSegments
        payload.withUnsafeBytes { raw in
            for index in 0..<4 {
                sender.enqueue(socket: out, to: destination, trafficClass: marking,
                               bytes: UnsafeRawBufferPointer(rebasing: raw[(index * 500)..<((index + 1) * 500)]))
            }
            sender.flush()
        }
        var arrivals: [ReceivedDatagram] = []
        _ = Loopback.drain(engine, count: 4) { arrivals.append($0) }
        XCTAssertEqual(arrivals.count, 4, "\(backend) \(local)", file: file, line: line)
        XCTAssertEqual(engine.counters.groSegments - before, 4, "\(backend) \(local): one GRO buffer", file: file, line: line)
        // The kernel says a socket's drops with the next datagram it takes: the burst's.
        XCTAssertGreaterThan(engine.counters.kernelDrops, 0, "\(backend): the flood overflowed the socket", file: file, line: line)
        for datagram in arrivals {
            XCTAssertEqual(datagram.trafficClass, marking, "\(backend) \(local): the TOS byte was cut off", file: file, line: line)
            XCTAssertEqual(datagram.localAddress, local.isWildcard ? Endpoint(host: "127.0.0.1", port: 0)! : Endpoint(high: 0, low: 0, port: 0),
                           "\(backend) \(local): the local address was cut off", file: file, line: line)
            if timestamps {
                XCTAssertNotEqual(datagram.receivedAt, 0, "\(backend) \(local): no timestamp", file: file, line: line)
                XCTAssertEqual(datagram.receivedAt, arrivals[0].receivedAt, "\(backend): one buffer, one stamp", file: file, line: line)
            }
        }
    }
}
