import Glibc
import NetAddress
import TestSupport
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

    /// The kernel really refuses the GSO sends (EINVAL for a socket without transmit checksums,
    /// EIO for UDP-Lite; see GSORefusal): GSO goes off for that socket, and every datagram of
    /// every refused run is resent once, in order, with its own marking.
    func testKernelRefusalFallsBackWithoutLossAndKeepsEveryMarking() throws {
        try checkEveryRefusal(local: Loopback.v4)
    }

    /// The same over IPv6, where the refused message carries IPV6_TCLASS beside UDP_SEGMENT.
    func testKernelRefusalOverIPv6FallsBackWithoutLossAndKeepsEveryMarking() throws {
        try IPv6Loopback.require()
        try checkEveryRefusal(local: Loopback.v6)
    }

    private func checkEveryRefusal(local: Endpoint) throws {
        let refusals = GSORefusal.allCases.filter { $0 != .udpLite || GSORefusal.kernelHasUDPLite }
        for backend in [Backend.mmsg, .uring] {
            for refusal in refusals {
                try checkFallback(backend: backend, refusal: refusal, local: local)
            }
        }
        // Said, not silent: the EINVAL cases ran; the EIO one needs UDP-Lite from this kernel.
        try XCTSkipUnless(GSORefusal.kernelHasUDPLite, "this kernel has no UDP-Lite: the EIO refusal was not exercised")
    }

    private func checkFallback(backend: Backend, refusal: GSORefusal, local: Endpoint) throws {
        let label = "\(backend) \(refusal) \(local.hostText)"
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true))
        let senderSocket = try refusal.sender(binding: local)
        let receiverSocket = try refusal.receiver(binding: local)
        XCTAssertEqual(GSORefusal.errnoOfGSOSend(on: senderSocket, to: receiverSocket.localEndpoint), refusal.expectedErrno,
                       "\(label): the kernel itself refuses GSO on this socket so")
        let sender = try engine.register(senderSocket)
        let receiver = try engine.register(receiverSocket)
        XCTAssertTrue(engine.gsoEnabled(sender), label)
        // Drop the probe's segments, if any arrived, before the test's own datagrams.
        while recv(receiverSocket.descriptor, nil, 0, Int32(MSG_DONTWAIT)) >= 0 {}
        let runs = RefusedRuns()
        for round in 0..<2 {
            runs.enqueue(on: engine, socket: sender, to: receiverSocket.localEndpoint)
            engine.flush()
            var index = 0
            var wrong: [String] = []
            let got = Loopback.drain(engine, count: RefusedRuns.count) { datagram in
                guard datagram.socket == receiver else { return wrong.append("on another socket") }
                if let problem = runs.problem(index, datagram) { wrong.append(problem) }
                index += 1
            }
            XCTAssertEqual(got, RefusedRuns.count, "\(label) round \(round): no datagram lost to the fallback")
            XCTAssertEqual(wrong, [], "\(label) round \(round): resent datagrams in order with their own marks")
        }
        XCTAssertEqual(engine.counters.gsoFallbacks, 1, "\(label): one socket turned GSO off, once")
        XCTAssertEqual(engine.counters.gsoSends, 0, label)
        XCTAssertEqual(engine.counters.datagramsOut, UInt64(2 * RefusedRuns.count), label)
        XCTAssertFalse(engine.gsoEnabled(sender), "\(label): GSO stays off for that socket")
        XCTAssertEqual(engine.counters.sendErrors.total, 0, label)
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

/// Four GSO runs of 16 equal datagrams, each run with its own size and marking, numbered by
/// their first byte: what a refused GSO socket must still deliver exactly.
final class RefusedRuns {
    static let count = 64
    static let markings = [TrafficClass(dscp: 34, ecn: .ect0), TrafficClass(dscp: 46, ecn: .ect1),
                           TrafficClass(dscp: 40, ecn: .ce), TrafficClass(dscp: 0, ecn: .notECT)]
    private let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: RefusedRuns.count * 300, alignment: 8)

    init() {
        payload.initializeMemory(as: UInt8.self, repeating: 0xA5)
        for index in 0..<RefusedRuns.count { payload[index * 300] = UInt8(index) }
    }

    deinit { payload.deallocate() }

    func size(_ index: Int) -> Int { 300 - 20 * (index / 16) }
    func marking(_ index: Int) -> TrafficClass { RefusedRuns.markings[index / 16] }

    func enqueue(on engine: DatagramEngine, socket: SocketID, to destination: Endpoint) {
        for index in 0..<RefusedRuns.count {
            engine.enqueue(socket: socket, to: destination, trafficClass: marking(index),
                           bytes: UnsafeRawBufferPointer(rebasing: payload[(index * 300)..<(index * 300 + size(index))]))
        }
    }

    /// What is wrong with `datagram` as the `index`th arrival, or nil.
    func problem(_ index: Int, _ datagram: ReceivedDatagram) -> String? {
        let number = datagram.bytes.first.map(Int.init) ?? -1
        guard number == index else { return "#\(index) arrived as #\(number)" }
        guard datagram.bytes.count == size(index) else { return "#\(index) has \(datagram.bytes.count) bytes" }
        guard datagram.trafficClass == marking(index) else { return "#\(index) marked \(datagram.trafficClass)" }
        return nil
    }
}
