import XCTest
@testable import DatagramEngine

/// The streams' deadline heap as table logic, in memory (the deadlines on real streams are
/// StreamEngineTests'): against a plain list under random sets, moves and removals, due streams
/// come out earliest first, each once, and none before its time.
final class StreamDeadlinesTests: XCTestCase {
    func testDueStreamsComeOutEarliestFirstUnderRandomChanges() {
        var generator = SystemRandomNumberGenerator()
        let limit = 64
        let deadlines = StreamDeadlines(limit: limit)
        var reference = [UInt64](repeating: .max, count: limit)
        var now: UInt64 = 0
        for _ in 0..<20_000 {
            let index = Int.random(in: 0..<limit, using: &generator)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0:
                deadlines.set(index, .max)
                reference[index] = .max
            case 1, 2:
                let deadline = now &+ UInt64.random(in: 0..<1_000, using: &generator)
                deadlines.set(index, deadline)
                reference[index] = deadline
            default:
                now &+= UInt64.random(in: 0..<300, using: &generator)
                var last: UInt64 = 0
                while let due = deadlines.popDue(now: now) {
                    XCTAssertLessThanOrEqual(reference[due], now, "stream \(due) came out before its time")
                    XCTAssertGreaterThanOrEqual(reference[due], last, "out of order")
                    last = reference[due]
                    reference[due] = .max
                }
                XCTAssertFalse(reference.contains { $0 <= now }, "a due stream stayed in")
            }
            XCTAssertEqual(deadlines.count, reference.filter { $0 != .max }.count)
            XCTAssertEqual(deadlines.earliest, reference.min())
        }
    }
}
