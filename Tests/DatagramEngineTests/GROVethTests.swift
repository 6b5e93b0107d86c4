import Foundation
import NetAddress
import XCTest
@testable import DatagramEngine

/// What the kernel's GRO coalesces, on datagrams sent one by one (no GSO) through a veth pair
/// whose receiving end does GRO: loopback hands GSO sends over whole and never coalesces
/// separate datagrams, so only here does the kernel's own rule show. A coalesced buffer has one
/// TOS byte, so the engine must never be handed datagrams with different marks in one buffer:
/// inet_gro_receive flushes a held packet when the next one's TOS (or TTL, or DF) differs.
///
/// Every datagram carries its mark in byte 0, so a buffer that mixed marks would show as a
/// datagram whose received TOS byte is not the one it was sent with.
final class GROVethTests: XCTestCase {
    static let marks = [TrafficClass(dscp: 46, ecn: .ect1), TrafficClass(dscp: 46, ecn: .ce),
                        TrafficClass(dscp: 34, ecn: .ect0), TrafficClass(rawValue: 0)]

    func testTheKernelCoalescesEqualMarksOnlyAndTheEngineKeepsEveryMark() throws {
        let pair = try VethPair()
        defer { pair.remove() }
        for backend in GROTests.backends { try run(backend, through: pair) }
    }

    private func run(_ backend: Backend, through pair: VethPair) throws {
        let sender = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false, gro: false))
        let receiver = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: false, gro: true))
        let from = try sender.register(pair.inside(receiver: false) { try UDPSocket(binding: pair.sender) })
        let socket = try pair.inside(receiver: true) { try UDPSocket(binding: pair.receiver) }
        let id = try receiver.register(socket)
        XCTAssertTrue(receiver.groEnabled(id), "\(backend)")
        let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1000, alignment: 8)
        defer { payload.deallocate() }

        /// Sends 64 datagrams of 1000 bytes in one sendmmsg, datagram i marked `mark(i)`, and
        /// receives them; returns how many arrived with a TOS byte other than their own.
        func round(_ mark: (Int) -> TrafficClass) -> Int {
            for index in 0..<64 {
                let slice = UnsafeMutableRawBufferPointer(rebasing: payload[(index * 1000)..<(index * 1000 + 1000)])
                slice[0] = mark(index).rawValue
                sender.enqueue(socket: from, to: socket.localEndpoint, trafficClass: mark(index), bytes: UnsafeRawBufferPointer(slice))
            }
            sender.flush()
            var mixed = 0
            let got = Loopback.drain(receiver, count: 64) { if $0.bytes[0] != $0.trafficClass.rawValue { mixed += 1 } }
            XCTAssertEqual(got, 64, "\(backend): every datagram arrives")
            return mixed
        }

        // Runs of eight with one mark, the mark changing between runs: the kernel coalesces
        // within a run (when its NAPI thread finds several waiting), never across.
        var mixed = 0
        let deadline = Date().addingTimeInterval(30)
        var rounds = 0
        while (rounds < 20 || receiver.counters.groSegments == 0) && Date() < deadline {
            mixed += round { GROVethTests.marks[($0 / 8) % 4] }
            rounds += 1
        }
        XCTAssertGreaterThan(receiver.counters.groSegments, 0, "\(backend): the veth's GRO coalesced runs of equal marks")
        XCTAssertEqual(mixed, 0, "\(backend): no buffer spanned two markings")

        // The mark changing with every datagram: nothing may coalesce at all.
        let coalescedBefore = receiver.counters.groSegments
        for _ in 0..<20 { mixed += round { GROVethTests.marks[$0 % 4] } }
        XCTAssertEqual(receiver.counters.groSegments, coalescedBefore, "\(backend): alternating marks were never coalesced")
        XCTAssertEqual(mixed, 0, "\(backend)")
    }
}
