import Dispatch
import NetAddress
@testable import RelayCore
import Synchronization
import SystemSupport
import XCTest

/// The relay-wide egress cap: one bucket that workers draw on a chunk at a time. Whatever the
/// number of workers, what passes is the rate plus one burst; marks come before drops, ECT(1)
/// first; the shared atomic is the only thing the workers touch in common.
final class EgressCapTests: XCTestCase {
    let thresholds = ECNThresholds()
    let start: UInt64 = 50_000_000_000

    /// `workers` shares sending 1,000-byte datagrams in turns of `perTurn` (not a multiple of
    /// the four codepoints, so each leads a turn in its turn; each share one turn
    /// in rotation) at `load` times a 1 MB/s cap for `seconds`: the verdicts by codepoint.
    func run(workers: Int, load: Double, seconds: Double, perTurn: Int = 7) -> [ECN: [PolicerVerdict]] {
        let bucket = EgressBucket(rate: 1_000_000, largestDatagram: 1500)
        let shares = (0..<workers).map { _ in EgressShare(bucket) }
        var random = MarkingRandom(seed: 5)
        var verdicts: [ECN: [PolicerVerdict]] = [:]
        let count = Int(1000 * load * seconds)
        var index = 0
        while index < count {
            let share = shares[(index / perTurn) % workers]
            let now = start + UInt64(Double(index) / (1000 * load) * 1e9)
            for _ in 0..<perTurn where index < count {
                let ecn = ECN.allCases[index % 4]
                verdicts[ecn, default: []].append(share.police(1000, ecn, now: now, marks: true, thresholds: thresholds, random: &random))
                index += 1
            }
            share.endTurn()
        }
        return verdicts
    }

    func testTheBurstAndTheChunk() {
        let bucket = EgressBucket(rate: 1_000_000, largestDatagram: 1500)
        XCTAssertEqual(bucket.chunkBytes, 1000, "1 ms of the rate")
        XCTAssertEqual(bucket.depthNanoseconds, 100_000_000)
        let slow = EgressBucket(rate: 125_000, largestDatagram: 9000)
        XCTAssertEqual(slow.depthNanoseconds, 144_000_000, "two jumbo datagrams at 1 Mbit/s")
    }

    func testUnderTheCapNothingIsMarkedOrDropped() {
        for workers in [1, 3] {
            for (ecn, verdicts) in run(workers: workers, load: 0.8, seconds: 3) {
                XCTAssertEqual(verdicts.filter { $0 != .pass }.count, 0, "\(workers) workers, \(ecn)")
            }
        }
    }

    func testPastTheCapWorkersTogetherPassTheRateAndMarkECT1First() throws {
        for workers in [1, 3] {
            let verdicts = run(workers: workers, load: 1.5, seconds: 2)
            let passed = verdicts.values.reduce(0) { $0 + $1.count { $0 != .drop } }
            // 2 s of 1,000 datagrams a second and a 100 ms burst; each worker may hold a chunk.
            XCTAssertEqual(Double(passed), 2100, accuracy: 30, "\(workers) workers")
            let ect1 = try XCTUnwrap(verdicts[.ect1]!.firstIndex(of: .mark))
            let ect0 = try XCTUnwrap(verdicts[.ect0]!.firstIndex(of: .mark))
            XCTAssertLessThan(ect1, ect0, "\(workers) workers")
            XCTAssertEqual(verdicts[.notECT]!.count { $0 == .mark }, 0)
            XCTAssertEqual(verdicts[.ce]!.count { $0 == .mark }, 0)
            for ecn in ECN.allCases { XCTAssertGreaterThan(verdicts[ecn]!.count { $0 == .drop }, 100, "\(ecn)") }
        }
    }

    func testMarkingOffOnlyDrops() {
        let bucket = EgressBucket(rate: 1_000_000, largestDatagram: 1500)
        let share = EgressShare(bucket)
        var random = MarkingRandom(seed: 5)
        var verdicts: [PolicerVerdict] = []
        for index in 0..<3000 {
            verdicts.append(share.police(1000, .ect1, now: start + UInt64(index) * 666_667, marks: false,
                                         thresholds: thresholds, random: &random))
        }
        XCTAssertEqual(verdicts.count { $0 == .mark }, 0)
        XCTAssertGreaterThan(verdicts.count { $0 == .drop }, 800)
    }

    func testUnspentCreditGoesBack() {
        let bucket = EgressBucket(rate: 1_000_000, largestDatagram: 1500)
        let share = EgressShare(bucket)
        var random = MarkingRandom(seed: 5)
        XCTAssertEqual(share.police(100, .ect0, now: start, marks: true, thresholds: thresholds, random: &random), .pass)
        XCTAssertEqual(bucket.inUse(now: start), 1_000_000, "a chunk taken: 1,000 bytes at 1 MB/s")
        share.endTurn()
        XCTAssertEqual(bucket.inUse(now: start), 100_000, "only the 100 bytes sent stay used")
    }

    /// Two threads, as two workers, with the real clock: together they pass the cap's rate
    /// plus its burst, and no lock is involved (a compare-exchange per chunk).
    func testTwoThreadsShareOneCap() {
        let bucket = EgressBucket(rate: 10_000_000, largestDatagram: 1500)
        let passed = Atomic<Int>(0)
        let began = MonotonicClock.now()
        let end = began + 300_000_000
        let thresholds = self.thresholds
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let share = EgressShare(bucket)
            var random = MarkingRandom()
            var mine = 0
            while MonotonicClock.now() < end {
                let now = MonotonicClock.now()
                for _ in 0..<16 where share.police(1000, .notECT, now: now, marks: true, thresholds: thresholds, random: &random) != .drop {
                    mine += 1
                }
                share.endTurn()
            }
            passed.add(mine, ordering: .relaxed)
        }
        let seconds = Double(MonotonicClock.now() - began) / 1e9
        // 10,000 datagrams a second for `seconds`, plus the 100 ms burst (1,000), plus a chunk each.
        let allowed = 10_000 * seconds + 1000 + 2 * 10
        XCTAssertLessThanOrEqual(Double(passed.load(ordering: .relaxed)), allowed)
        XCTAssertGreaterThan(Double(passed.load(ordering: .relaxed)), 0.9 * allowed - 1000)
    }
}
