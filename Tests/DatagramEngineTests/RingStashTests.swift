@testable import DatagramEngine
import Glibc
import XCTest

/// The io_uring engine's kept completions live in fixed storage, sized for every provided
/// buffer and socket slot (never grown on the send path): order is kept across wrap-around and
/// across growth when sockets are registered.
final class RingStashTests: XCTestCase {
    func testKeptCompletionsComeBackOldestFirstThroughWrapAndGrowth() throws {
        var pipeEnds: [Int32] = [-1, -1]   // the ring's wake-up read needs a descriptor
        XCTAssertEqual(pipe(&pipeEnds), 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        let ring = try Ring(buffers: 4, bufferSize: 256, wakeDescriptor: pipeEnds[0])
        let capacity = Ring.stashCapacity(buffers: 4, slots: 1024)
        func completion(_ n: Int) -> RingCompletion {
            RingCompletion(tag: RingTag(.receive, slot: n), result: Int32(n), flags: 0)
        }
        var next = 0
        var expected = 0
        // Fill to the brim, then take and keep around the end of the storage several times.
        for _ in 0..<capacity { ring.keep(completion(next)); next += 1 }
        for _ in 0..<(capacity * 2 + 7) {  // ends mid-storage, so growth must unwrap
            XCTAssertEqual(ring.takeKept().result, Int32(expected))
            expected += 1
            ring.keep(completion(next))
            next += 1
        }
        XCTAssertEqual(ring.stashCount, capacity)
        // More socket slots make room, keeping the order of what is waiting.
        ring.reserveStash(forSockets: 2048)
        for _ in 0..<100 { ring.keep(completion(next)); next += 1 }
        while ring.stashCount > 0 {
            XCTAssertEqual(ring.takeKept().result, Int32(expected))
            expected += 1
        }
        XCTAssertEqual(expected, next)
    }
}
