import Glibc
import NetAddress
import XCTest
@testable import DatagramEngine

/// UDP GRO on receive (mmsg and io_uring, each test on both): a burst of one flow arrives as one buffer with its segment size
/// and is split into its datagrams, each with the buffer's source and TOS byte; where they all
/// go on to one destination they leave again as one GSO send, pointing into the same buffer.
///
/// On loopback the kernel hands a GSO send to a UDP_GRO socket whole, so a GSO sender (an
/// engine with GSO on) produces exactly the coalesced buffers a NIC's GRO would.
final class GROTests: XCTestCase {
    /// Sends `runs` from a GSO engine: each run is datagrams of the given sizes (the last may be
    /// shorter) with one marking; byte 0 of each datagram numbers it.
    func send(_ runs: [(sizes: [Int], marking: TrafficClass)], to destination: Endpoint) throws -> EngineCounters {
        let sender = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: true, gro: false))
        let socket = try sender.register(UDPSocket(binding: Loopback.v4))
        let total = runs.reduce(0) { $0 + $1.sizes.reduce(0, +) }
        var payload = [UInt8](repeating: 0xEE, count: total)
        var offset = 0, number: UInt8 = 0
        var slices: [(Range<Int>, TrafficClass)] = []
        for run in runs {
            for size in run.sizes {
                payload[offset] = number
                number += 1
                slices.append((offset..<(offset + size), run.marking))
                offset += size
            }
        }
        payload.withUnsafeBytes { raw in
            for (range, marking) in slices {
                sender.enqueue(socket: socket, to: destination, trafficClass: marking, bytes: UnsafeRawBufferPointer(rebasing: raw[range]))
            }
            sender.flush()
        }
        return sender.counters
    }

    /// The backends GRO runs on: both batched ones.
    static let backends: [Backend] = [.mmsg, .uring]

    func receiver(_ backend: Backend, gro: Bool = true) throws -> (DatagramEngine, SocketID, Endpoint) {
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true, gro: gro))
        let socket = try UDPSocket(binding: Loopback.v4)
        let id = try engine.register(socket)
        return (engine, id, socket.localEndpoint)
    }

    func testABurstIsSplitIntoItsDatagramsWithEqualAndShorterLastSegments() throws {
        for backend in Self.backends { try burstIsSplit(backend) }
    }

    func testMixedMarksAreNeverMerged() throws {
        for backend in Self.backends { try mixedMarksStayApart(backend) }
    }

    func testPassThroughLeavesAsOneGSOSendAndDeliversEveryDatagramWithItsMarks() throws {
        for backend in Self.backends { try passThrough(backend) }
    }

    func testGROOffReceivesOneDatagramPerBuffer() throws {
        for backend in Self.backends { try groOff(backend) }
    }

    func testGROIsNotAskedForOnThePerPacketBaseline() throws {
        // perpacket is the one-datagram-per-call baseline the batched backends are measured against.
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: .perPacket, gro: true))
        let id = try engine.register(UDPSocket(binding: Loopback.v4))
        XCTAssertFalse(engine.groEnabled(id))
    }

    func burstIsSplit(_ backend: Backend) throws {
        let (engine, id, address) = try receiver(backend)
        XCTAssertTrue(engine.groEnabled(id), "\(backend): the kernel here takes UDP_GRO (Linux 5.0 and later)")
        let ef = TrafficClass(dscp: 46, ecn: .ect1)
        let sent = try send([([1000, 1000, 1000, 1000], ef), ([800, 800, 800, 300], ef)], to: address)
        XCTAssertEqual(sent.gsoSends, 2)
        XCTAssertEqual(sent.gsoSegments, 8, "the shorter last datagram ends the second GSO send instead of leaving alone")
        var arrivals: [(number: UInt8, size: Int, marking: TrafficClass)] = []
        _ = Loopback.drain(engine, count: 8) { arrivals.append(($0.bytes[0], $0.bytes.count, $0.trafficClass)) }
        XCTAssertEqual(arrivals.map(\.number), Array(0..<8), "\(backend)")
        XCTAssertEqual(arrivals.map(\.size), [1000, 1000, 1000, 1000, 800, 800, 800, 300], "\(backend)")
        XCTAssertEqual(Set(arrivals.map(\.marking)), [ef], "\(backend)")
        XCTAssertEqual(engine.counters.groSegments, 8, "\(backend): both sends arrived coalesced and were split")
        XCTAssertEqual(engine.counters.datagramsIn, 8, "\(backend)")
        XCTAssertEqual(engine.counters.bytesIn, 6700, "\(backend)")
    }

    func mixedMarksStayApart(_ backend: Backend) throws {
        let (engine, _, address) = try receiver(backend)
        let marks = [TrafficClass(dscp: 46, ecn: .ect1), TrafficClass(dscp: 46, ecn: .ce),
                     TrafficClass(dscp: 34, ecn: .ect0), TrafficClass(rawValue: 0)]
        _ = try send(marks.map { ([500, 500, 500], $0) }, to: address)
        var arrivals: [(number: UInt8, marking: TrafficClass)] = []
        _ = Loopback.drain(engine, count: 12) { arrivals.append(($0.bytes[0], $0.trafficClass)) }
        XCTAssertEqual(arrivals.map(\.number), Array(0..<12), "\(backend)")
        XCTAssertEqual(arrivals.map(\.marking), marks.flatMap { Array(repeating: $0, count: 3) },
                       "\(backend): each datagram keeps its own DSCP and ECN: one buffer never spans two markings")
        XCTAssertEqual(engine.counters.groSegments, 12, "\(backend)")
    }

    func passThrough(_ backend: Backend) throws {
        let (relay, relayID, relayAddress) = try receiver(backend)
        let (sink, _, sinkAddress) = try receiver(.mmsg, gro: false)
        let marking = TrafficClass(dscp: 34, ecn: .ect0)
        _ = try send([(Array(repeating: 1200, count: 7) + [640], marking)], to: relayAddress)
        var forwarded = 0
        let deadline = Date().addingTimeInterval(5)
        while forwarded < 8 && Date() < deadline {
            let count = relay.receive(timeoutMilliseconds: 50)
            for index in 0..<count {
                let datagram = relay.received(index)
                relay.enqueue(socket: relayID, to: sinkAddress, trafficClass: datagram.trafficClass, bytes: datagram.bytes)
            }
            relay.flush()
            forwarded += count
        }
        XCTAssertEqual(relay.counters.groSegments, 8, "\(backend)")
        XCTAssertEqual(relay.counters.gsoSends, 1, "\(backend): the coalesced buffer left as one GSO send")
        XCTAssertEqual(relay.counters.gsoSegments, 8, "\(backend)")
        var arrivals: [(number: UInt8, size: Int, marking: TrafficClass)] = []
        _ = Loopback.drain(sink, count: 8) { arrivals.append(($0.bytes[0], $0.bytes.count, $0.trafficClass)) }
        XCTAssertEqual(arrivals.map(\.number), Array(0..<8), "\(backend)")
        XCTAssertEqual(arrivals.map(\.size), Array(repeating: 1200, count: 7) + [640], "\(backend)")
        XCTAssertEqual(Set(arrivals.map(\.marking)), [marking], "\(backend)")
        XCTAssertEqual(sink.counters.groSegments, 0, "the sink has GRO off: the kernel cut the send into datagrams")
    }

    func groOff(_ backend: Backend) throws {
        let (engine, id, address) = try receiver(backend, gro: false)
        XCTAssertFalse(engine.groEnabled(id), "\(backend)")
        _ = try send([([900, 900, 900, 900], TrafficClass(dscp: 46, ecn: .ect1))], to: address)
        var sizes: [Int] = []
        _ = Loopback.drain(engine, count: 4) { sizes.append($0.bytes.count) }
        XCTAssertEqual(sizes, [900, 900, 900, 900], "\(backend)")
        XCTAssertEqual(engine.counters.groSegments, 0, "\(backend)")
    }

    func testAKernelThatRefusesUDPGROLeavesTheSocketReceivingSingleDatagrams() throws {
        // A real refusal by this kernel: UDP_GRO on a socket that is not UDP (ENOPROTOOPT).
        let tcp = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(tcp, 0)
        defer { close(tcp) }
        XCTAssertFalse(UDPSocket.enableGRO(tcp))
        let udp = try UDPSocket(binding: Loopback.v4)
        XCTAssertTrue(UDPSocket.enableGRO(udp.descriptor))
    }
}
