import SystemSupport
import XCTest
@testable import LoadGen

final class PacerTests: XCTestCase {
    /// Drives the pacer from the real clock for about a second and compares the ticks it
    /// released with what the elapsed time calls for. The expectation is computed from the
    /// measured elapsed time, so a slow machine changes both sides alike.
    func testHoldsRateWithinTwoPercentOverASecond() {
        let rate = 20_000.0
        let start = MonotonicClock.now()
        var pacer = Pacer(ticksPerSecond: rate, start: start, maxBurst: 64, maxDebt: 1_000_000)
        var released = 0
        var now = start
        while now - start < 1_000_000_000 {
            released += pacer.due(at: now)
            MonotonicClock.sleep(until: min(pacer.nextDeadline, start + 1_000_000_000))
            now = MonotonicClock.now()
        }
        released += pacer.due(at: now)
        let expected = Double(now - start) / 1e9 * rate
        XCTAssertEqual(Double(released), expected, accuracy: expected * 0.02,
                       "released \(released) ticks, elapsed time calls for \(expected)")
    }

    func testScheduleIsAbsoluteAndBurstCapped() {
        var pacer = Pacer(ticksPerSecond: 1000, start: 1_000_000, maxBurst: 10, maxDebt: 100)
        XCTAssertEqual(pacer.due(at: 999_999), 0, "nothing before the start")
        XCTAssertEqual(pacer.due(at: 1_000_000), 1, "tick 0 at the start")
        XCTAssertEqual(pacer.due(at: 1_500_000), 0)
        XCTAssertEqual(pacer.due(at: 2_000_000), 1)
        // 20 ticks late: released 10 at a time, none lost.
        let late: UInt64 = 1_000_000 + 22 * 1_000_000
        XCTAssertEqual(pacer.due(at: late), 10)
        XCTAssertEqual(pacer.due(at: late), 10)
        XCTAssertEqual(pacer.due(at: late), 1)
        XCTAssertEqual(pacer.due(at: late), 0)
        XCTAssertEqual(pacer.releasedTicks, 23)
        XCTAssertEqual(pacer.skipped, 0)
        XCTAssertEqual(pacer.nextDeadline, 1_000_000 + 23 * 1_000_000)
    }

    func testLongStallIsForgivenNotBurst() {
        var pacer = Pacer(ticksPerSecond: 1000, start: 0, maxBurst: 10, maxDebt: 100)
        XCTAssertEqual(pacer.due(at: 0), 1)
        // One second late: 1000 ticks owed, more than maxDebt: only one burst, the rest skipped.
        XCTAssertEqual(pacer.due(at: 1_000_000_000), 10)
        XCTAssertEqual(pacer.skipped, 1000 - 10)
        XCTAssertEqual(pacer.due(at: 1_000_000_000), 0, "back on schedule after the burst")
    }
}
