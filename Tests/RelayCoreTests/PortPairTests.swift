@testable import RelayCore
import XCTest

/// RTP/RTCP port pairs from the relay's range: an even port and the odd one after it, both
/// free, never straddling a port some other socket holds.
final class PortPairTests: XCTestCase {
    func testPairsAreAlignedEvenOddAndSkipHeldPorts() {
        let pool = PortPool(range: 40001...40010)  // odd lower bound: first pair is 40002/40003
        XCTAssertEqual(pool.acquirePair(), 40002)
        XCTAssertTrue(pool.isHeld(40002) && pool.isHeld(40003))
        let single = pool.acquire()  // 40004: the next pair must not straddle it
        XCTAssertEqual(single, 40004)
        XCTAssertEqual(pool.acquirePair(), 40006)
        XCTAssertEqual(pool.acquirePair(), 40008)
        XCTAssertNil(pool.acquirePair(), "40010 has no odd partner in the range; 40004/40005 is half taken")
        XCTAssertEqual(pool.held, 7)
        pool.release(40004)
        XCTAssertEqual(pool.acquirePair(), 40004, "a freed pair is found again, round-robin wrapping")
        for port in UInt16(40001)...40010 { pool.release(port) }
        XCTAssertEqual(pool.held, 0)
        XCTAssertEqual(pool.available, 10)
    }

    func testEveryPairOfARangeCanBeTaken() {
        let pool = PortPool(range: 41000...41099)
        var ports: Set<UInt16> = []
        while let port = pool.acquirePair() {
            XCTAssertEqual(port % 2, 0)
            ports.insert(port)
        }
        XCTAssertEqual(ports.count, 50)
        XCTAssertEqual(pool.available, 0)
    }
}
