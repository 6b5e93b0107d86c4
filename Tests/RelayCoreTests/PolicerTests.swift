import NetAddress
@testable import RelayCore
import XCTest

/// The policer under every rate limit, on a clock the test moves: marking off is the bucket the
/// relay always had, datagram for datagram; marking on, ECT(1) is marked from a shallower fill
/// than ECT(0), nothing is marked under the rate, Not-ECT and CE never, and every codepoint is
/// dropped when the bucket is empty.
final class PolicerTests: XCTestCase {
    let second: UInt64 = 1_000_000_000
    let start: UInt64 = 5_000_000_000
    let thresholds = ECNThresholds()

    /// The relay's bucket before marking (SessionTable.takeToken, TurnTable.withinBandwidth),
    /// kept here as the reference marking-off must match.
    struct ReferenceBucket {
        let rate: UInt64
        var tokens: UInt64
        var lastRefill: UInt64

        mutating func take(_ cost: UInt64, now: UInt64) -> Bool {
            let elapsed = min(now &- lastRefill, 1_000_000_000)
            tokens = min(tokens &+ elapsed &* rate, rate &* 1_000_000_000)
            lastRefill = now
            guard tokens >= cost &* 1_000_000_000 else { return false }
            tokens &-= cost &* 1_000_000_000
            return true
        }
    }

    func testMarkingOffIsTheOldBucketExactly() {
        var random = MarkingRandom(seed: 7)
        var clock = MarkingRandom(seed: 11)
        for rate: UInt64 in [1, 10, 1000, 125_000, 1_000_000_000] {
            var policer = Policer(rate: rate, now: start)
            var reference = ReferenceBucket(rate: rate, tokens: rate * second, lastRefill: start)
            var now = start
            var dropped = 0
            // Costs of 1 (datagrams) or 1...1500 (bytes), at about 1.33 times the rate on average.
            let meanCost: UInt64 = rate > 10_000 ? 750 : 1
            let spacing = meanCost * second / rate * 3 / 2
            for _ in 0..<20_000 {
                now += UInt64(clock.next()) % spacing
                let cost = meanCost > 1 ? UInt64(clock.next() % 1500) + 1 : 1
                let ecn = ECN(rawValue: UInt8(clock.next() & 3))!
                let verdict = policer.police(cost, ecn, now: now, marks: false, thresholds: thresholds, random: &random)
                let passed = reference.take(cost, now: now)
                XCTAssertEqual(verdict, passed ? .pass : .drop, "rate \(rate)")
                if !passed { dropped += 1 }
            }
            // A second of 1 GB/s is more than these datagrams: that rate checks the arithmetic only.
            if rate < 1_000_000_000 { XCTAssertGreaterThan(dropped, 0, "rate \(rate): the sequence never reached the limit") }
        }
    }

    /// Datagrams of each codepoint in turn at `load` times a rate of 1,000 a second for
    /// `seconds`: the verdicts by codepoint, in order.
    func run(load: Double, seconds: Double, marks: Bool = true) -> [ECN: [PolicerVerdict]] {
        var policer = Policer(rate: 1000, now: start)
        var random = MarkingRandom(seed: 3)
        var verdicts: [ECN: [PolicerVerdict]] = [:]
        let count = Int(1000 * load * seconds)
        for index in 0..<count {
            let now = start + UInt64(Double(index) / (1000 * load) * 1e9)
            let ecn = ECN.allCases[index % 4]
            verdicts[ecn, default: []].append(policer.police(1, ecn, now: now, marks: marks, thresholds: thresholds, random: &random))
        }
        return verdicts
    }

    func testNothingIsMarkedOrDroppedUnderTheRate() {
        for (ecn, verdicts) in run(load: 0.8, seconds: 10) {
            XCTAssertEqual(verdicts.filter { $0 != .pass }.count, 0, "\(ecn) at 0.8x")
        }
    }

    func testPastTheRateECT1IsMarkedFirstAndMostAndNotECTNever() throws {
        let verdicts = run(load: 1.5, seconds: 3)
        func firstMark(_ ecn: ECN) -> Int? { verdicts[ecn]!.firstIndex(of: .mark) }
        func share(_ ecn: ECN, _ verdict: PolicerVerdict) -> Double {
            Double(verdicts[ecn]!.count { $0 == verdict }) / Double(verdicts[ecn]!.count)
        }
        let ect1 = try XCTUnwrap(firstMark(.ect1)), ect0 = try XCTUnwrap(firstMark(.ect0))
        XCTAssertLessThan(ect1, ect0, "ECT(1) is marked at a shallower fill")
        XCTAssertGreaterThan(share(.ect1, .mark), share(.ect0, .mark))
        XCTAssertEqual(share(.notECT, .mark), 0)
        XCTAssertEqual(share(.ce, .mark), 0, "CE stays CE: nothing to mark")
        // A quarter of the burst lasts half a second at 1.5x: nothing is marked before it.
        XCTAssertGreaterThan(ect1, Int(0.45 * 375))
        // Every codepoint is dropped once the bucket is empty (after two seconds).
        for ecn in ECN.allCases {
            XCTAssertGreaterThan(share(ecn, .drop), 0.05, "\(ecn)")
            XCTAssertEqual(verdicts[ecn]!.prefix(700).count { $0 == .drop }, 0, "\(ecn) dropped before the bucket was empty")
        }
    }

    func testMarkingOffPastTheRateOnlyDrops() {
        let on = run(load: 1.5, seconds: 3)
        let off = run(load: 1.5, seconds: 3, marks: false)
        for ecn in ECN.allCases {
            XCTAssertEqual(off[ecn]!.count { $0 == .mark }, 0)
            // Marking never changes what is dropped: the bucket is the same either way.
            XCTAssertEqual(off[ecn]!.map { $0 == .drop }, on[ecn]!.map { $0 == .drop }, "\(ecn)")
        }
    }

    /// The probabilities of the curve at chosen fills, by counting 100,000 draws.
    func testTheRampsAndTheirCoupling() {
        let depth: UInt64 = 1 << 40
        func share(_ ecn: ECN, atFill fill: Double) -> Double {
            var random = MarkingRandom(seed: 1)
            let deficit = UInt64(Double(depth) * fill)
            let draws = 100_000
            return Double((0..<draws).count { _ in thresholds.marks(ecn, deficit: deficit, depth: depth, random: &random) }) / Double(draws)
        }
        for ecn in ECN.allCases { XCTAssertEqual(share(ecn, atFill: 0.2), 0, "\(ecn) under the L4S threshold") }
        // ECT(1): its own ramp from 25%; ECT(0): nothing before 50%.
        XCTAssertEqual(share(.ect1, atFill: 0.4), 0.2, accuracy: 0.01)
        XCTAssertEqual(share(.ect0, atFill: 0.4), 0)
        // At 60%: p' = 0.2, so ECT(0) is marked with p'^2 = 0.04 and ECT(1) with
        // max(0.467 (own ramp), 2p' = 0.4).
        XCTAssertEqual(share(.ect0, atFill: 0.6), 0.04, accuracy: 0.005)
        XCTAssertEqual(share(.ect1, atFill: 0.6), 0.467, accuracy: 0.01)
        // At 74%: p' = 0.48: the coupling (0.96) wins over the own ramp (0.653).
        XCTAssertEqual(share(.ect1, atFill: 0.74), 0.96, accuracy: 0.01)
        XCTAssertEqual(share(.ect0, atFill: 0.74), 0.2304, accuracy: 0.01)
        for ecn in [ECN.ect0, .ect1] { XCTAssertEqual(share(ecn, atFill: 1.0), 1, "\(ecn) at the empty bucket") }
        for ecn in [ECN.notECT, .ce] { XCTAssertEqual(share(ecn, atFill: 1.0), 0, "\(ecn) is never marked") }
    }

    func testTheRandomSourceIsEven() {
        var random = MarkingRandom(seed: 42)
        var buckets = [Int](repeating: 0, count: 16)
        for _ in 0..<160_000 { buckets[Int(random.next() >> 28)] += 1 }
        for count in buckets { XCTAssertEqual(Double(count), 10_000, accuracy: 400) }
    }

    /// The fast path's credit: what the kernel may forward is exactly what the bucket would
    /// pass unmarked, and once it is spent the next ECT(1) datagram meets the marking ramp.
    func testCreditIsWhatPassesUnmarked() {
        let thresholds = ECNThresholds()
        var random = MarkingRandom(seed: 5)
        var bucket = Policer(rate: 1_000, now: 0)
        let credit = bucket.credit(now: 0, marks: true, thresholds: thresholds)
        XCTAssertEqual(credit, 250, accuracy: 1, "marking starts a quarter into the burst (rounded down)")
        XCTAssertEqual(bucket.credit(now: 0, marks: false, thresholds: thresholds), 1_000, "without marking, the whole burst")
        bucket.reserve(credit, now: 0)
        XCTAssertEqual(bucket.credit(now: 0, marks: true, thresholds: thresholds), 0)
        XCTAssertEqual(bucket.police(0, .ect1, now: 0, marks: true, thresholds: thresholds, random: &random), .pass,
                       "at the threshold itself nothing is marked yet")
        var marked = 0
        for _ in 0..<100 where bucket.police(5, .ect1, now: 0, marks: true, thresholds: thresholds, random: &random) == .mark { marked += 1 }
        XCTAssertGreaterThan(marked, 0, "past the credit the user-space policer marks")
        bucket.reserve(10_000, now: 0)
        XCTAssertEqual(bucket.police(1, .notECT, now: 0, marks: true, thresholds: thresholds, random: &random), .drop,
                       "a reserve past the tokens empties the bucket, never wraps")
        XCTAssertEqual(bucket.credit(now: 500_000_000, marks: false, thresholds: thresholds), 500, "half a second refills half")
        bucket.release(300, now: 500_000_000)
        XCTAssertEqual(bucket.credit(now: 500_000_000, marks: false, thresholds: thresholds), 800, "what the kernel left comes back")
        bucket.release(10_000, now: 500_000_000)
        XCTAssertEqual(bucket.credit(now: 500_000_000, marks: false, thresholds: thresholds), 1_000, "never past a full bucket")
    }
}
