import Glibc
import NetAddress
import TestSupport
import XCTest
@testable import DatagramEngine

/// A message that shares its socket, destination or marking with the one before it reuses the
/// address and control bytes already written (SendVectors.build). Each reuse must still send
/// every datagram to its own destination with its own marking, and a GSO fallback on one
/// message must not change another message that shares its control bytes.
final class SharedSendSpaceTests: XCTestCase {
    /// One datagram of the sequence: from which sender, to which receiver, marked how, how long.
    struct Step {
        let sender: Int
        let receiver: Int
        let mark: TrafficClass
        let size: Int
    }

    static let m1 = TrafficClass(dscp: 46, ecn: .ect1), m2 = TrafficClass(dscp: 10, ecn: .ce)

    /// Senders 0 and 1 are IPv4 sockets; receivers 0 and 1 IPv4.
    func testEveryChangeOfDestinationOrMarkingIsWrittenAgain() throws {
        try check(Self.steps(), senders: [Loopback.v4, Loopback.v4], receivers: [Loopback.v4, Loopback.v4])
    }

    /// Sender 1 is a dual-stack IPv6 socket, receiver 2 is on ::1: the address family and the
    /// TOS cmsg change between neighbours too.
    func testEveryChangeOfFamilyIsWrittenAgain() throws {
        try IPv6Loopback.require()
        let toIPv6 = Step(sender: 1, receiver: 2, mark: Self.m2, size: 110)  // IPV6_TCLASS
        try check(Self.steps(inserting: toIPv6), senders: [Loopback.v4, Loopback.dualStack],
                  receivers: [Loopback.v4, Loopback.v4, Loopback.v6])
    }

    /// The sequence, with `extra` (if any) before the closing GSO run.
    static func steps(inserting extra: Step? = nil) -> [Step] {
        var steps = Array(repeating: Step(sender: 0, receiver: 0, mark: m1, size: 100), count: 3)  // a GSO run
        steps += [
            Step(sender: 0, receiver: 0, mark: m1, size: 50),  // same address, new control (no segment size)
            Step(sender: 0, receiver: 1, mark: m1, size: 60),  // new address, same control
            Step(sender: 0, receiver: 1, mark: m2, size: 70),  // same address, new marking
            Step(sender: 0, receiver: 0, mark: m2, size: 80),  // back to the first address
            Step(sender: 1, receiver: 1, mark: m2, size: 90),  // a dual-stack sender writes ::ffff:127.0.0.1
            Step(sender: 0, receiver: 1, mark: m2, size: 95),  // same destination: an IPv4 socket needs sockaddr_in
        ]
        if let extra { steps.append(extra) }
        steps += Array(repeating: Step(sender: 0, receiver: 0, mark: m1, size: 100), count: 3)  // as the first run
        return steps
    }

    private func check(_ steps: [Step], senders senderAddresses: [Endpoint], receivers receiverAddresses: [Endpoint]) throws {
        for backend in [Backend.mmsg, .uring] {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true))
            let senders = try senderAddresses.map { try engine.register(UDPSocket(binding: $0)) }
            let receiverSockets = try receiverAddresses.map { try UDPSocket(binding: $0) }
            var lanes: [SocketID: Int] = [:]
            for (lane, socket) in receiverSockets.enumerated() { lanes[try engine.register(socket)] = lane }

            var payload = [UInt8](repeating: 0xEE, count: steps.count * 128)
            for index in steps.indices { payload[index * 128] = UInt8(index) }
            var arrived: [[String]] = Array(repeating: [], count: receiverSockets.count)
            payload.withUnsafeBytes { raw in
                for (index, step) in steps.enumerated() {
                    engine.enqueue(socket: senders[step.sender], to: receiverSockets[step.receiver].localEndpoint,
                                   trafficClass: step.mark, bytes: UnsafeRawBufferPointer(rebasing: raw[(index * 128)..<(index * 128 + step.size)]))
                }
                engine.flush()
                _ = Loopback.drain(engine, count: steps.count) { datagram in
                    guard let lane = lanes[datagram.socket] else { return }
                    arrived[lane].append("#\(datagram.bytes.first ?? 255) \(datagram.bytes.count) B \(datagram.trafficClass)")
                }
            }
            var expected: [[String]] = Array(repeating: [], count: receiverSockets.count)
            for (index, step) in steps.enumerated() { expected[step.receiver].append("#\(index) \(step.size) B \(step.mark)") }
            XCTAssertEqual(arrived, expected, "\(backend): each datagram at its own receiver, in order, with its own marking")
            XCTAssertEqual(engine.counters.sendErrors.total, 0, "\(backend)")
            XCTAssertEqual(engine.counters.gsoSends, 2, "\(backend): the two runs of three, each one GSO send")
        }
    }

    /// 100 equal datagrams of one marking to one peer make two GSO messages (64 + 36 segments)
    /// that share their control bytes, on a socket whose GSO sends the kernel refuses. The
    /// first message's fallback cuts its own control length to the TOS cmsg; the second, still
    /// pointing at the same bytes with its full length, is refused and resent the same way:
    /// every datagram arrives once, on its own.
    func testAFallbackLeavesTheControlBytesItSharesAlone() throws {
        for backend in [Backend.mmsg, .uring] {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true))
            let sender = try engine.register(GSORefusal.noChecksum.sender(binding: Loopback.v4))
            let receiverSocket = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(receiverSocket)
            var payload = [UInt8](repeating: 0x33, count: 100 * 200)
            for index in 0..<100 { payload[index * 200] = UInt8(index) }
            var arrived: [String] = []
            payload.withUnsafeBytes { raw in
                for index in 0..<100 {
                    engine.enqueue(socket: sender, to: receiverSocket.localEndpoint, trafficClass: TrafficClass(dscp: 34, ecn: .ect0),
                                   bytes: UnsafeRawBufferPointer(rebasing: raw[(index * 200)..<(index * 200 + 200)]))
                }
                engine.flush()
                _ = Loopback.drain(engine, count: 100) { arrived.append("#\($0.bytes.first ?? 255) \($0.bytes.count) B") }
            }
            XCTAssertEqual(arrived, (0..<100).map { "#\($0) 200 B" }, "\(backend): every datagram resent on its own")
            XCTAssertEqual(engine.counters.datagramsOut, 100, "\(backend)")
            XCTAssertEqual(engine.counters.gsoFallbacks, 1, "\(backend)")
        }
    }
}
