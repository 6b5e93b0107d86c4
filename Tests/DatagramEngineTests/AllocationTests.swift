import Glibc
import NetAddress
import XCTest
import MallocCounter
@testable import DatagramEngine

/// The packet path allocates nothing per datagram. A test-only interposer counts every malloc,
/// calloc, realloc and aligned allocation made by this thread while 100,000 datagrams go out
/// through the engine and come back in (on mmsg and uring as UDP GRO buffers, split); after a
/// warm-up the count must be zero. The sends are GSO runs (equal size and marking, the marking
/// changing between runs), so the GSO path is what is measured, and so is the fallback resend
/// when the kernel refuses GSO. With receive timestamps on, too: their control message is
/// parsed and converted per datagram, still with nothing allocated.
final class AllocationTests: XCTestCase {
    /// Each flush: four runs of 16, each run with its own size and marking (RefusedRuns).
    static let perFlush = RefusedRuns.count
    static let runsPerFlush = 4

    func testHundredThousandDatagramsAllocateNothing() throws {
        for backend in ConformanceTests.backends {
            for timestamps in [false, true] {
                try hundredThousandDatagrams(backend, timestamps: timestamps)
            }
        }
    }

    private func hundredThousandDatagrams(_ backend: Backend, timestamps: Bool) throws {
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true, receiveTimestamps: timestamps))
        let sender = try engine.register(UDPSocket(binding: Loopback.v4))
        let receiver = try UDPSocket(binding: Loopback.v4)
        _ = try engine.register(receiver)
        let runs = RefusedRuns()

        _ = roundTrips(engine, runs, from: sender, to: receiver.localEndpoint, datagrams: 6_400)  // warm-up
        let before = engine.counters
        malloc_counter_start()
        let received = roundTrips(engine, runs, from: sender, to: receiver.localEndpoint, datagrams: 100_032)
        let allocations = malloc_counter_stop()
        XCTAssertEqual(received, 100_032, "\(backend)")
        XCTAssertEqual(allocations, 0, "\(backend), timestamps \(timestamps): heap allocations on the packet path")
        XCTAssertEqual(engine.received(0).receivedAt != 0, timestamps, "\(backend): stamped as configured")
        let gsoSends = engine.counters.gsoSends - before.gsoSends
        let gsoSegments = engine.counters.gsoSegments - before.gsoSegments
        if backend == .perPacket {
            XCTAssertEqual(gsoSends, 0, "perpacket never merges")
        } else {
            XCTAssertEqual(gsoSends, UInt64(100_032 / Self.perFlush * Self.runsPerFlush), "\(backend): every run left as one GSO send")
            XCTAssertEqual(gsoSegments, 100_032, "\(backend): every datagram went out as a GSO segment")
        }
        if backend != .perPacket {
            // The GSO sends arrive as UDP GRO buffers here, so their split is on the path measured.
            XCTAssertGreaterThan(engine.counters.groSegments - before.groSegments, 50_000, "\(backend): GRO's split was exercised")
        }
    }

    /// The fallback resend allocates nothing either: a warm-up socket meets the refusal first,
    /// then a second refusing socket's first flush (refused, resent one by one) is counted.
    func testTheGSOFallbackResendAllocatesNothing() throws {
        for backend in [Backend.mmsg, .uring] {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true))
            let receiver = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(receiver)
            let runs = RefusedRuns()
            let warmUp = try engine.register(GSORefusal.noChecksum.sender(binding: Loopback.v4))
            _ = roundTrips(engine, runs, from: warmUp, to: receiver.localEndpoint, datagrams: 640)
            let measured = try engine.register(GSORefusal.noChecksum.sender(binding: Loopback.v4))
            engine.receive(timeoutMilliseconds: 0)  // arms its io_uring receive: registering is not the packet path
            let before = engine.counters
            malloc_counter_start()
            let received = roundTrips(engine, runs, from: measured, to: receiver.localEndpoint, datagrams: Self.perFlush)
            let allocations = malloc_counter_stop()
            XCTAssertEqual(received, Self.perFlush, "\(backend)")
            XCTAssertEqual(engine.counters.gsoFallbacks - before.gsoFallbacks, 1, "\(backend): the measured flush was refused and resent")
            XCTAssertEqual(allocations, 0, "\(backend): heap allocations in the fallback resend")
        }
    }

    /// Answers from the address each datagram reached allocate nothing either: a socket bound to
    /// 0.0.0.0 reads IP_PKTINFO with every datagram (sent to 127.0.0.2) and echoes each from it.
    func testAnswersFromTheAddressReachedAllocateNothing() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true))
            let serverSocket = try UDPSocket(binding: Loopback.wildcardV4)
            let server = try engine.register(serverSocket)
            let client = try engine.register(UDPSocket(binding: Loopback.v4))
            let reached = Endpoint(host: "127.0.0.2", port: serverSocket.localEndpoint.port)!
            let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 200, alignment: 8)
            defer { payload.deallocate() }
            payload.initializeMemory(as: UInt8.self, repeating: 5)
            _ = echoes(engine, server: server, client: client, to: reached, payload: UnsafeRawBufferPointer(payload), count: 1_600)  // warm-up
            malloc_counter_start()
            let (answered, fromReached) = echoes(engine, server: server, client: client, to: reached,
                                                 payload: UnsafeRawBufferPointer(payload), count: 16_000)
            let allocations = malloc_counter_stop()
            XCTAssertEqual(answered, 16_000, "\(backend)")
            XCTAssertEqual(fromReached, 16_000, "\(backend): every answer left from 127.0.0.2")
            XCTAssertEqual(allocations, 0, "\(backend): heap allocations on the path that reads and writes the local address")
        }
    }

    /// Sends `count` datagrams from `client` to `reached` in flushes of 16, echoes each from
    /// `server` from the address it reached, and returns how many answers came back and how
    /// many of those from `reached`.
    private func echoes(_ engine: DatagramEngine, server: SocketID, client: SocketID, to reached: Endpoint,
                        payload: UnsafeRawBufferPointer, count: Int) -> (Int, Int) {
        var (answered, fromReached, sent) = (0, 0, 0)
        while sent < count {
            for _ in 0..<16 { engine.enqueue(socket: client, to: reached, trafficClass: TrafficClass(rawValue: 0), bytes: payload) }
            engine.flush()
            sent += 16
            var spins = 0
            while answered < sent && spins < 1000 {
                let received = engine.receive(timeoutMilliseconds: 100)
                for index in 0..<received {
                    let datagram = engine.received(index)
                    if datagram.socket == server {
                        engine.enqueue(socket: server, to: datagram.source, from: datagram.localAddress, trafficClass: datagram.trafficClass,
                                       bytes: datagram.bytes)
                    } else {
                        answered += 1
                        if datagram.source == reached { fromReached += 1 }
                    }
                }
                engine.flush()
                spins += 1
            }
        }
        return (answered, fromReached)
    }

    /// Sends `datagrams` as flushes of RefusedRuns and receives them; returns how many came back.
    private func roundTrips(_ engine: DatagramEngine, _ runs: RefusedRuns, from sender: SocketID, to destination: Endpoint,
                            datagrams: Int) -> Int {
        var received = 0
        var sent = 0
        while sent < datagrams {
            runs.enqueue(on: engine, socket: sender, to: destination)
            engine.flush()
            sent += Self.perFlush
            var spins = 0
            while received < sent && spins < 1000 {
                received += engine.receive(timeoutMilliseconds: 100)
                spins += 1
            }
        }
        return received
    }

    /// The counter itself must see allocations, or the tests above prove nothing: both a plain
    /// malloc and one made inside the Swift runtime (swift_allocObject for a class instance)
    /// on this thread.
    func testTheCounterSeesAnAllocation() {
        malloc_counter_start()
        let pointer = malloc(100)
        let counted = malloc_counter_stop()
        free(pointer)
        XCTAssertEqual(counted, 1)

        malloc_counter_start()
        let box = Self.makeBox()
        let countedObject = malloc_counter_stop()
        XCTAssertEqual(box.value, 7)
        XCTAssertEqual(countedObject, 1, "swift_allocObject's malloc is counted")
    }

    private final class Box {
        var value = 7
    }

    @inline(never)
    private static func makeBox() -> Box { Box() }
}
