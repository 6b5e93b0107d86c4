@testable import LoadComparison
import XCTest
@testable import LoadGen

/// The generator's ECN-reactive senders, one feedback window at a time, and the options that
/// choose them.
final class CongestionControlTests: XCTestCase {
    let quiet = FeedbackWindow(received: 100, marked: 0, lost: 0)

    func testClassicHalvesOnAMarkOrALossAndAddsAStepOtherwise() {
        var classic = RateController(.classic, offered: 1000)
        XCTAssertEqual(classic.update(FeedbackWindow(received: 100, marked: 1, lost: 0)), 500, "one mark halves")
        XCTAssertEqual(classic.update(FeedbackWindow(received: 100, marked: 0, lost: 3)), 250, "a loss halves")
        XCTAssertEqual(classic.update(quiet), 260, "additive increase: 1% of the offered rate")
        for _ in 0..<200 { classic.update(quiet) }
        XCTAssertEqual(classic.rate, 1000, "never above the offered rate")
        for _ in 0..<20 { classic.update(FeedbackWindow(received: 1, marked: 1, lost: 0)) }
        XCTAssertEqual(classic.rate, 10, "never below 1% of it")
    }

    func testScalableReducesInProportionToTheFractionMarked() {
        var scalable = RateController(.scalable, offered: 1000)
        // A tenth marked: alpha moves 1/16 of the way to 0.1, the rate falls by alpha / 2.
        let rate = scalable.update(FeedbackWindow(received: 100, marked: 10, lost: 0))
        XCTAssertEqual(scalable.alpha, 0.1 / 16, accuracy: 1e-12)
        XCTAssertEqual(rate, 1000 * (1 - 0.1 / 32), accuracy: 1e-9)
        // Always a tenth: alpha tends to 0.1, so the cut tends to 5% a window.
        for _ in 0..<200 { scalable.update(FeedbackWindow(received: 100, marked: 10, lost: 0)) }
        XCTAssertEqual(scalable.alpha, 0.1, accuracy: 1e-4)
        let before = scalable.rate
        XCTAssertEqual(scalable.update(FeedbackWindow(received: 100, marked: 10, lost: 0)), max(10, before * 0.95), accuracy: 0.01)
        // Far gentler than classic on one mark; a loss still halves.
        var gentle = RateController(.scalable, offered: 1000)
        XCTAssertGreaterThan(gentle.update(FeedbackWindow(received: 100, marked: 1, lost: 0)), 999)
        XCTAssertEqual(gentle.update(FeedbackWindow(received: 100, marked: 0, lost: 1)), gentle.maximum / 2, accuracy: 1)
    }

    func testNoneKeepsTheOfferedRate() {
        var none = RateController(.none, offered: 1000)
        XCTAssertEqual(none.update(FeedbackWindow(received: 100, marked: 100, lost: 100)), 1000)
    }

    func testFeedbackCountsMarksAndLosses() {
        let feedback = StreamFeedback(streams: 2)
        for sequence: UInt64 in [0, 1, 3, 4] { feedback.record(stream: 1, sequence: sequence, marked: sequence == 4) }
        feedback.record(stream: 7, sequence: 0, marked: true)  // not a stream of the run: ignored
        XCTAssertEqual(feedback.totals(1), FeedbackWindow(received: 4, marked: 1, lost: 1))
        XCTAssertEqual(feedback.totals(0), FeedbackWindow(received: 0, marked: 0, lost: 0))
    }

    func testOptions() throws {
        func error(_ args: [String]) -> String? {
            do { _ = try OptionParser.parse(args); return nil } catch { return error.message }
        }
        let base = ["--relay", "http://127.0.0.1:9480"]
        guard case .run(let o) = try OptionParser.parse(base + ["--congestion-control", "scalable",
                                                               "--session", #"{"max_packets_per_second": 2000}"#]) else { return XCTFail() }
        XCTAssertEqual(o.congestionControl, .scalable)
        XCTAssertEqual(o.sessionFieldMembers, #""max_packets_per_second": 2000"#)
        XCTAssertEqual(error(base + ["--congestion-control", "bbr"]), "--congestion-control bbr: accepted: none, classic, scalable")
        XCTAssertEqual(error(base + ["--congestion-control", "classic", "--profile", "voice"])?.hasPrefix("--congestion-control: only with --profile constant"), true)
        XCTAssertEqual(error(base + ["--session", "[1]"])?.hasPrefix("--session [1]: expected a JSON object"), true)
        XCTAssertEqual(error(base + ["--session", #"{"legs": 3}"#])?.hasPrefix("--session: \"legs\""), true)
        XCTAssertEqual(error(["--target", "127.0.0.1:7777", "--upstream-listen", "127.0.0.1:9000", "--session", "{}"])?
            .hasPrefix("--session: only in session mode"), true)
    }
}
