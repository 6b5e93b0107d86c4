import SystemSupport
import XCTest
@testable import LoadGen

final class PacerTests: XCTestCase {
    /// The pacer over a second of an irregular clock: wake-ups early, on time and up to 3 ms
    /// late (what a loaded machine does), never more than a burst behind. The ticks released
    /// must be exactly those whose deadline has passed, at every wake-up: the rate holds
    /// however late the wake-ups, and no real clock makes the test depend on the machine.
    func testReleasesExactlyTheTicksDueUnderAnIrregularClock() {
        let rate = 20_000.0  // a tick every 50 us: 60 ticks in 3 ms, under the burst of 64
        let start: UInt64 = 5_000_000_000
        var pacer = Pacer(ticksPerSecond: rate, start: start, maxBurst: 64, maxDebt: 1_000_000)
        var state: UInt64 = 42
        func random() -> UInt64 {  // a fixed LCG: the same irregular clock every run
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 17
        }
        var now = start
        var released = 0
        var wrong: [String] = []
        while now < start + 1_000_000_000 {
            released += pacer.due(at: now)
            let due = Int((now - start) / 50_000) + 1
            if released != due { wrong.append("at +\(now - start) ns released \(released), due \(due)") }
            // The next wake-up: usually at the pacer's deadline, sometimes early, often late.
            let late = random() % 3_000_001
            now = random() % 5 == 0 ? now + late / 10 : max(now + 1, pacer.nextDeadline + late)
        }
        XCTAssertEqual(wrong.prefix(5), [], "\(wrong.count) wake-ups released the wrong number of ticks")
        XCTAssertEqual(pacer.skipped, 0)
        XCTAssertGreaterThan(released, 19_000, "a second's worth")
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

