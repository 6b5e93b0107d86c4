import DatagramEngine
import XCTest

/// Totals across workers come from `merge`, which sums the fields `summedFields` lists: a
/// counter added to EngineCounters but not to that list would silently read 0 in every total.
final class CountersMergeTests: XCTestCase {
    func testEveryPlainCounterIsSummed() {
        let plain = Mirror(reflecting: EngineCounters()).children.filter { $0.value is UInt64 }
        XCTAssertEqual(plain.count, EngineCounters.summedFields.count,
                       "fields: \(plain.compactMap(\.label))")
    }

    func testMergeAddsEveryKindOfCounter() {
        var one = EngineCounters()
        for field in EngineCounters.summedFields { one[keyPath: field] = 3 }
        one.batchSizes[2] = 5
        one.ecnIn[1] = 7
        one.ecnOut[3] = 11
        var total = EngineCounters()
        total.merge(one)
        total.merge(one)
        for field in EngineCounters.summedFields { XCTAssertEqual(total[keyPath: field], 6) }
        XCTAssertEqual(total.batchSizes[2], 10)
        XCTAssertEqual(total.ecnIn(.ect1), 14)
        XCTAssertEqual(total.ecnOut(.ce), 22)
    }
}
