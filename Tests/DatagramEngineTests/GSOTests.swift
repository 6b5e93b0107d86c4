import Glibc
import XCTest
@testable import DatagramEngine

/// UDP GSO: equal-size runs leave as one send; a kernel refusal turns GSO off for the socket
/// and the datagrams go out one by one, none lost.
final class GSOTests: XCTestCase {
    func testEqualSizeRunsLeaveAsOneSendAndArriveAsSeparateDatagrams() throws {
        for backend in [Backend.mmsg, .uring] {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true))
            let senderSocket = try UDPSocket(binding: Loopback.v4)
            XCTAssertTrue(senderSocket.supportsGSO, "the kernel here supports UDP_SEGMENT")
            let sender = try engine.register(senderSocket)
            let receiver = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(receiver)
            var payload = [UInt8](repeating: 0, count: 64 * 200)
            for index in 0..<64 { payload[index * 200] = UInt8(index) }
            let marking = TrafficClass(dscp: 34, ecn: .ect1)
            var firstBytes: [UInt8] = []
            var markings = Set<TrafficClass>()
            payload.withUnsafeBytes { raw in
                for index in 0..<64 {
                    engine.enqueue(socket: sender, to: receiver.localEndpoint, trafficClass: marking,
                                   bytes: UnsafeRawBufferPointer(rebasing: raw[(index * 200)..<(index * 200 + 200)]))
                }
                engine.flush()
                _ = Loopback.drain(engine, count: 64) { datagram in
                    XCTAssertEqual(datagram.bytes.count, 200)
                    firstBytes.append(datagram.bytes[0])
                    markings.insert(datagram.trafficClass)
                }
            }
            XCTAssertEqual(firstBytes, (0..<64).map(UInt8.init), "\(backend): all 64 segments, in order")
            XCTAssertEqual(markings, [marking], "\(backend): every segment keeps DSCP and ECN")
            XCTAssertEqual(engine.counters.gsoSends, 1, "\(backend)")
            XCTAssertEqual(engine.counters.gsoSegments, 64, "\(backend)")
            XCTAssertEqual(engine.counters.datagramsOut, 64, "\(backend)")
        }
    }

    /// A change of marking in the middle of a run ends that GSO send (one marking per send)
    /// but nothing is lost or re-marked.
    func testMarkingChangeSplitsOnlyTheGSORun() throws {
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: .uring, gso: true))
        let sender = try engine.register(UDPSocket(binding: Loopback.v4))
        let receiver = try UDPSocket(binding: Loopback.v4)
        _ = try engine.register(receiver)
        let payload = [UInt8](repeating: 9, count: 100)
        var ecns: [ECN] = []
        payload.withUnsafeBytes { raw in
            for index in 0..<20 {
                engine.enqueue(socket: sender, to: receiver.localEndpoint,
                               trafficClass: TrafficClass(dscp: 0, ecn: index < 10 ? .ect0 : .ce), bytes: raw)
            }
            engine.flush()
            _ = Loopback.drain(engine, count: 20) { ecns.append($0.trafficClass.ecn) }
        }
        XCTAssertEqual(ecns, Array(repeating: ECN.ect0, count: 10) + Array(repeating: ECN.ce, count: 10))
        XCTAssertEqual(engine.counters.gsoSends, 2)
    }

    /// The kernel refuses UDP GSO on a socket whose transmit checksum is off (SO_NO_CHECK):
    /// a real EINVAL from udp_send_skb, no mock. The engine must resend one by one.
    func testKernelRefusalFallsBackWithoutLoss() throws {
        for backend in [Backend.mmsg, .uring] {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true))
            let senderSocket = try UDPSocket(binding: Loopback.v4)
            var on: Int32 = 1
            XCTAssertEqual(setsockopt(senderSocket.descriptor, SOL_SOCKET, SO_NO_CHECK, &on, 4), 0)
            let sender = try engine.register(senderSocket)
            let receiver = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(receiver)
            let payload = [UInt8](repeating: 7, count: 300)
            var got = 0
            payload.withUnsafeBytes { raw in
                for _ in 0..<32 {
                    engine.enqueue(socket: sender, to: receiver.localEndpoint, trafficClass: TrafficClass(rawValue: 2), bytes: raw)
                }
                engine.flush()
                got = Loopback.drain(engine, count: 32)
            }
            XCTAssertEqual(got, 32, "\(backend): no datagram lost to the fallback")
            XCTAssertEqual(engine.counters.gsoFallbacks, 1, "\(backend)")
            XCTAssertEqual(engine.counters.gsoSends, 0, "\(backend)")
            XCTAssertFalse(engine.gsoEnabled(sender), "\(backend): GSO stays off for that socket")
            XCTAssertEqual(engine.counters.sendErrors.total, 0, "\(backend)")
        }
    }

    func testSwitchTurnsGSOOffEntirely() throws {
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false))
        let sender = try engine.register(UDPSocket(binding: Loopback.v4))
        let receiver = try UDPSocket(binding: Loopback.v4)
        _ = try engine.register(receiver)
        XCTAssertFalse(engine.gsoEnabled(sender))
        let payload = [UInt8](repeating: 1, count: 100)
        payload.withUnsafeBytes { raw in
            for _ in 0..<16 { engine.enqueue(socket: sender, to: receiver.localEndpoint, trafficClass: TrafficClass(rawValue: 0), bytes: raw) }
            engine.flush()
        }
        XCTAssertEqual(Loopback.drain(engine, count: 16), 16)
        XCTAssertEqual(engine.counters.gsoSends, 0)
    }
}
