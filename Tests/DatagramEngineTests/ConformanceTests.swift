import Glibc
import NetAddress
import TestSupport
import XCTest
@testable import DatagramEngine

/// Every backend moves every byte, DSCP and ECN codepoint as sent, in order per flow.
final class ConformanceTests: XCTestCase {
    static let backends: [Backend] = [.perPacket, .mmsg, .uring]

    func testTenThousandDatagramsArriveExactlyAsSentOnEveryBackend() throws {
        for backend in Self.backends {
            for gso in [false, true] where backend != .perPacket || !gso {
                try roundTrip(backend: backend, gso: gso, local: Loopback.v4)
            }
        }
    }

    func testIPv6RoundTripOnEveryBackend() throws {
        try IPv6Loopback.require()
        for backend in Self.backends { try roundTrip(backend: backend, gso: true, local: Loopback.v6) }
    }

    /// A dual-stack sender reaching an IPv4 peer uses IPv4-mapped addresses and IP_TOS: the ECN
    /// bits and DSCP must survive that path too.
    func testIPv4MappedDestinationsKeepTheirMarking() throws {
        try IPv6Loopback.require()  // dual-stack sockets need IPv6
        for backend in Self.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            let sender = try engine.register(UDPSocket(binding: Loopback.dualStack))
            let receiverSocket = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(receiverSocket)
            let payload: [UInt8] = [1, 2, 3]
            var seen: [TrafficClass] = []
            payload.withUnsafeBytes { bytes in
                for ecn in ECN.allCases {
                    engine.enqueue(socket: sender, to: receiverSocket.localEndpoint,
                                   trafficClass: TrafficClass(dscp: 46, ecn: ecn), bytes: bytes)
                }
                engine.flush()
                _ = Loopback.drain(engine, count: 4) { seen.append($0.trafficClass) }
            }
            XCTAssertEqual(seen.map(\.ecn), ECN.allCases, "\(backend)")
            XCTAssertEqual(Set(seen.map(\.dscp)), [46], "\(backend)")
        }
    }

    /// One flush to several destinations with a different marking on every datagram: nothing
    /// is split or lost, and each destination gets its datagrams in order.
    func testOneBatchToMixedDestinations() throws {
        for backend in Self.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            let sender = try engine.register(UDPSocket(binding: Loopback.v4))
            let receivers = try (0..<3).map { _ in try UDPSocket(binding: Loopback.v4) }
            var lanes: [SocketID: Int] = [:]
            for (lane, receiver) in receivers.enumerated() { lanes[try engine.register(receiver)] = lane }
            let pattern = Pattern(count: 60)
            defer { pattern.free() }
            for index in 0..<60 {
                engine.enqueue(socket: sender, to: receivers[index % 3].localEndpoint,
                               trafficClass: pattern.trafficClass(index), bytes: pattern.bytes(index))
            }
            engine.flush()
            var next = [0, 1, 2]
            var mismatches = 0
            let got = Loopback.drain(engine, count: 60) { datagram in
                guard let lane = lanes[datagram.socket] else { return mismatches += 1 }
                if !pattern.matches(next[lane], datagram) { mismatches += 1 }
                next[lane] += 3
            }
            XCTAssertEqual(got, 60, "\(backend)")
            XCTAssertEqual(mismatches, 0, "\(backend)")
            XCTAssertEqual(next, [60, 61, 62], "\(backend): every destination got its 20 datagrams in order")
            XCTAssertEqual(engine.counters.sendErrors.total, 0, "\(backend)")
        }
    }

    private func roundTrip(backend: Backend, gso: Bool, local: Endpoint) throws {
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: gso))
        let sender = try engine.register(UDPSocket(binding: local))
        let receiverSocket = try UDPSocket(binding: local)
        _ = try engine.register(receiverSocket)
        let total = 10_000
        // GSO rounds send runs of 8 equal datagrams of one marking; the others vary every datagram.
        let run = gso ? 8 : 1
        let pattern = Pattern(count: total, run: run)
        defer { pattern.free() }
        var next = 0
        var mismatches = 0
        var sent = 0
        while sent < total {
            let chunk = min(64, total - sent)
            for index in sent..<(sent + chunk) {
                engine.enqueue(socket: sender, to: receiverSocket.localEndpoint,
                               trafficClass: pattern.trafficClass(index), bytes: pattern.bytes(index))
            }
            engine.flush()
            sent += chunk
            _ = Loopback.drain(engine, count: chunk) { datagram in
                if !pattern.matches(next, datagram) { mismatches += 1 }
                next += 1
            }
        }
        let label = "\(backend) gso=\(gso) \(local.hostText)"
        XCTAssertEqual(next, total, label)
        XCTAssertEqual(mismatches, 0, "\(label): datagrams differ from what was sent")
        XCTAssertEqual(engine.counters.datagramsOut, UInt64(total), label)
        XCTAssertEqual(engine.counters.datagramsIn, UInt64(total), label)
        // Every run of non-empty datagrams is one GSO send (64 per flush is a whole number of
        // runs, so no run straddles two flushes); empty datagrams are never merged.
        let mergedRuns = stride(from: 0, to: total, by: run).filter { pattern.size($0) > 0 }.count
        let merges = gso && backend != .perPacket
        XCTAssertEqual(engine.counters.gsoSends, merges ? UInt64(mergedRuns) : 0, "\(label): GSO sends")
        XCTAssertEqual(engine.counters.gsoSegments, merges ? UInt64(mergedRuns * run) : 0, "\(label): GSO segments")
        XCTAssertEqual(engine.counters.gsoFallbacks, 0, label)
        var ecnSent = [UInt64](repeating: 0, count: 4)
        for index in 0..<total { ecnSent[Int(pattern.trafficClass(index).ecn.rawValue)] += 1 }
        for codepoint in ECN.allCases {
            XCTAssertEqual(engine.counters.ecnIn(codepoint), ecnSent[Int(codepoint.rawValue)], "\(label) \(codepoint)")
            XCTAssertEqual(engine.counters.ecnOut(codepoint), ecnSent[Int(codepoint.rawValue)], "\(label) \(codepoint)")
        }
    }
}
