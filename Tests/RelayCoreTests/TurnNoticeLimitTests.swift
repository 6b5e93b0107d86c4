import NetAddress
@testable import RelayCore
import XCTest

/// The rate limits in front of TURN's log lines: per source address for failed
/// authentications, per kind of cause for refusals; what they hold back is counted and
/// reported on the next line that passes. Time is the test's own.
final class TurnNoticeLimitTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    func testASourceGetsItsBurstThenOneLinePerIntervalWithTheCountHeldBack() {
        var budget = SourceNoticeBudget()
        let source = Endpoint(host: "192.0.2.1", port: 5000)!
        var now = 100 * second
        for _ in 0..<SourceNoticeBudget.burst { XCTAssertEqual(budget.take(source, now: now), 0) }
        for _ in 0..<7 { XCTAssertNil(budget.take(source, now: now)) }
        now += SourceNoticeBudget.refillNanoseconds - 1
        XCTAssertNil(budget.take(source, now: now), "one nanosecond before the next line")
        now += 1
        XCTAssertEqual(budget.take(source, now: now), 8, "the eight held back are reported")
        XCTAssertNil(budget.take(source, now: now))
        now += SourceNoticeBudget.refillNanoseconds
        XCTAssertEqual(budget.take(source, now: now), 1)
    }

    func testAnotherPortOfTheSameAddressSharesItsBudgetAndAnotherAddressHasItsOwn() {
        var budget = SourceNoticeBudget()
        let now = 100 * second
        for port in 0..<SourceNoticeBudget.burst { XCTAssertNotNil(budget.take(Endpoint(host: "192.0.2.1", port: UInt16(5000 + port))!, now: now)) }
        XCTAssertNil(budget.take(Endpoint(host: "192.0.2.1", port: 6000)!, now: now))
        XCTAssertEqual(budget.take(Endpoint(host: "2001:db8::1", port: 6000)!, now: now), 0)
    }

    func testManyAddressesAtOnceMeetTheWorkerWideBound() {
        var budget = SourceNoticeBudget(count: 4096)
        let now = 100 * second
        var written = 0
        for index in 0..<1000 where budget.take(Endpoint(ipv4: 0xC633_6400 + UInt32(index), port: 1), now: now) != nil {
            written += 1
        }
        XCTAssertEqual(UInt64(written), SourceNoticeBudget.workerBurst)
    }

    func testARefusalCauseIsWrittenOncePerIntervalWithTheCountHeldBack() {
        var gate = RefusalNoticeGate()
        var now = 100 * second
        XCTAssertEqual(gate.take(.noRelayedPort, now: now), 0)
        XCTAssertNil(gate.take(.noRelayedPort, now: now + 1))
        XCTAssertNil(gate.take(.noRelayedPort, now: now + 2))
        XCTAssertEqual(gate.take(.allocationLimit, now: now + 3), 0, "another cause has its own line")
        let peer = Endpoint(host: "10.0.0.1", port: 0)!
        XCTAssertEqual(gate.take(.peerRefused(.privateNetwork, peer), now: now), 0)
        XCTAssertNil(gate.take(.peerRefused(.loopback, peer), now: now), "peer refusals are one kind")
        now += RefusalNoticeGate.intervalNanoseconds
        XCTAssertEqual(gate.take(.noRelayedPort, now: now), 2)
    }
}
