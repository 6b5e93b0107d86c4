@testable import ClientSockets
import XCTest
@testable import LoadGen

final class ReceiverStatisticsTests: XCTestCase {
    func testSequenceWindowClassifiesArrivals() {
        var w = SequenceWindow()
        let arrivals: [(UInt64, SequenceWindow.Arrival)] = [
            (0, .inOrder), (1, .inOrder), (3, .inOrder), (2, .reordered), (2, .duplicate),
            (5, .inOrder), (3, .duplicate), (4, .reordered), (9, .inOrder),
        ]
        for (seq, what) in arrivals { XCTAssertEqual(w.record(seq), what, "sequence \(seq)") }
        XCTAssertEqual(w.unique, 7)  // 0,1,2,3,4,5,9
        XCTAssertEqual(w.reordered, 2)
        XCTAssertEqual(w.duplicated, 2)
        XCTAssertEqual(w.expected, 10, "6, 7 and 8 missing")
    }

    func testWindowSlidesAndForgetsOldSlots() {
        var w = SequenceWindow()
        w.record(0)
        w.record(SequenceWindow.windowSize)  // slot of 0 reused
        XCTAssertEqual(w.record(SequenceWindow.windowSize + 1), .inOrder)
        XCTAssertEqual(w.record(0), .tooOld, "beyond the window: counted as reordered, cannot be checked for duplication")
        XCTAssertEqual(w.record(10), .reordered, "a never-seen number inside the window, not mistaken for a duplicate")
        XCTAssertEqual(w.record(10), .duplicate)
        w.record(3 * SequenceWindow.windowSize)  // a jump beyond the window clears it
        XCTAssertEqual(w.record(3 * SequenceWindow.windowSize - 5), .reordered)
    }

    func testLossReorderDuplicateAcrossStreams() {
        var s = ReceiverStatistics(streams: 2)
        func rx(_ stream: UInt32, _ seq: UInt64, tos: UInt8 = 2, sentTOS: UInt8 = 2) {
            s.record(PayloadHeader(stream: stream, sequence: seq, sendTime: 1000, tos: sentTOS), length: 64, tos: tos, now: 2000)
        }
        // Stream 0: 0..9 sent, 4 lost, 7 before 6, 8 twice.
        for seq: UInt64 in [0, 1, 2, 3, 5, 7, 6, 8, 8, 9] { rx(0, seq) }
        // Stream 1: 0..4, all in order, one ECN bleached and one DSCP re-marked.
        rx(1, 0); rx(1, 1, tos: 0); rx(1, 2, tos: 46 << 2 | 2); rx(1, 3); rx(1, 4)
        rx(7, 0)  // unknown stream
        rx(0, PayloadHeader.latchSequence)  // latching datagram: not measured
        let sent: UInt64 = 15
        XCTAssertEqual(s.unique, 14)
        XCTAssertEqual(sent - s.unique, 1, "one lost")
        XCTAssertEqual(s.reordered, 1)
        XCTAssertEqual(s.duplicated, 1)
        XCTAssertEqual(s.received, 15, "duplicates count as received datagrams")
        XCTAssertEqual(s.foreign, 1)
        XCTAssertEqual(s.latching, 1)
        XCTAssertEqual(s.ecnKept, 14)
        XCTAssertEqual(s.dscpKept, 14)
    }

    func testPercentilesWithinOnePercent() {
        var h = LatencyHistogram()
        for v in 1...100_000 as ClosedRange<UInt64> { h.record(v * 1000) }  // 1 us ... 100 ms in ns
        for (q, exact) in [(0.5, 50_000_000.0), (0.9, 90_000_000.0), (0.99, 99_000_000.0), (0.999, 99_900_000.0)] {
            let got = Double(h.quantile(q))
            XCTAssertEqual(got, exact, accuracy: exact * 0.01, "q \(q)")
        }
        XCTAssertEqual(h.quantile(1), 100_000_000, "max is exact")
        XCTAssertEqual(h.count, 100_000)
        // Small values are exact.
        var small = LatencyHistogram()
        for v: UInt64 in [5, 1, 3, 2, 4] { small.record(v) }
        XCTAssertEqual(small.quantile(0.5), 3)
        XCTAssertEqual(small.quantile(0.2), 1)
        XCTAssertEqual(LatencyHistogram().quantile(0.99), 0, "empty")
    }

    func testBucketErrorBoundHoldsEverywhere() {
        var v: UInt64 = 1
        while v < UInt64(1) << 62 {
            for x in [v, v + v / 3, v + v / 2, 2 * v - 1] {
                let mid = LatencyHistogram.value(at: LatencyHistogram.index(of: x))
                XCTAssertLessThanOrEqual(abs(Double(mid) - Double(x)), Double(x) / 256 + 0.5, "value \(x)")
            }
            v *= 2
        }
    }

    func testJitterFollowsRFC3550() {
        var s = ReceiverStatistics(streams: 1)
        // Transit alternates 100 us and 300 us: |D| = 200 us each step, J -> 200 us.
        for i in 0..<2000 as Range<UInt64> {
            let send = i * 20_000_000
            s.record(PayloadHeader(stream: 0, sequence: i, sendTime: send, tos: 0), length: 64, tos: 0,
                     now: send + (i % 2 == 0 ? 100_000 : 300_000))
        }
        XCTAssertEqual(s.meanJitterNs, 200_000, accuracy: 1)
        XCTAssertEqual(s.latency.quantile(0.25), 100_000, accuracy: 500)
        XCTAssertEqual(s.latency.quantile(0.75), 300_000, accuracy: 1500)
    }

    func testWarmupIsLeftOutOfLatencyOnly() {
        var s = ReceiverStatistics(streams: 1, latencyFrom: 1_000_000)
        s.record(PayloadHeader(stream: 0, sequence: 0, sendTime: 0, tos: 0), length: 64, tos: 0, now: 900_000)
        s.record(PayloadHeader(stream: 0, sequence: 1, sendTime: 1_000_000, tos: 0), length: 64, tos: 0, now: 1_010_000)
        XCTAssertEqual(s.latency.count, 1)
        XCTAssertEqual(s.unique, 2)
    }

    func testSummary() {
        XCTAssertEqual(Summary([3, 1, 2]), Summary(Array([1, 2, 3]))!)
        XCTAssertEqual(Summary([3, 1, 2])!.median, 2)
        XCTAssertEqual(Summary([4, 1, 3, 2])!.median, 2.5)
        XCTAssertEqual(Summary([4, 1, 3, 2])!.min, 1)
        XCTAssertEqual(Summary([4, 1, 3, 2])!.max, 4)
        XCTAssertNil(Summary([]))
    }
}
