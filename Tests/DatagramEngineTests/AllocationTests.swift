import Glibc
import XCTest
import MallocCounter
@testable import DatagramEngine

/// The packet path allocates nothing per datagram. A test-only interposer counts every malloc,
/// calloc, realloc and aligned allocation made by this thread while 100,000 datagrams go out
/// through the engine and come back in (on mmsg and uring as UDP GRO buffers, split); after a warm-up
/// the count must be zero.
final class AllocationTests: XCTestCase {
    func testHundredThousandDatagramsAllocateNothing() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: true))
            let sender = try engine.register(UDPSocket(binding: Loopback.v4))
            let receiver = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(receiver)
            let destination = receiver.localEndpoint
            let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 200, alignment: 8)
            defer { payload.deallocate() }
            payload.initializeMemory(as: UInt8.self, repeating: 3)

            func run(_ datagrams: Int) -> Int {
                var received = 0
                var sent = 0
                while sent < datagrams {
                    for index in 0..<64 {
                        // Two sizes and four markings in runs of eight, so that GSO runs (and on
                        // the batched backends the GRO buffers they arrive as) and cmsgs all vary.
                        let size = index < 32 ? 200 : 120
                        engine.enqueue(socket: sender, to: destination,
                                       trafficClass: TrafficClass(rawValue: UInt8((index / 8) & 3) | 0xB8),
                                       bytes: UnsafeRawBufferPointer(rebasing: payload[(index * 200)..<(index * 200 + size)]))
                    }
                    engine.flush()
                    sent += 64
                    var spins = 0
                    while received < sent && spins < 1000 {
                        received += engine.receive(timeoutMilliseconds: 100)
                        spins += 1
                    }
                }
                return received
            }

            _ = run(6_400)  // warm-up: lazily sized tables settle here
            malloc_counter_start()
            let received = run(100_032)
            let allocations = malloc_counter_stop()
            XCTAssertEqual(received, 100_032, "\(backend)")
            XCTAssertEqual(allocations, 0, "\(backend): heap allocations on the packet path")
            if backend != .perPacket {
                // The GSO sends arrive as UDP GRO buffers here, so their split is on the path measured.
                XCTAssertGreaterThan(engine.counters.groSegments, 50_000, "\(backend): GRO's split was exercised")
            }
        }
    }

    /// The counter itself must see allocations, or the test above proves nothing.
    func testTheCounterSeesAnAllocation() {
        malloc_counter_start()
        let pointer = malloc(100)
        let counted = malloc_counter_stop()
        free(pointer)
        XCTAssertEqual(counted, 1)
    }
}
