import DatagramEngine
import MallocCounter
@testable import RelayCore
import NetAddress
import STUN
import TestPorts
import XCTest

/// The per-source budget of answers to requests that did not authenticate: a burst then the
/// rate, IPv6 by /64, eviction that keeps a drained source drained, and in the TURN table: past
/// the budget unsigned requests go unanswered (counted) without an allocation, while Binding
/// and signed requests from the same address are still answered.
final class AnswerBudgetTests: XCTestCase {
    let second: UInt64 = 1_000_000_000
    let start: UInt64 = 1_000 * 1_000_000_000

    func testABurstOfTwoSecondsThenTheRate() {
        var budget = AnswerBudget()
        let source = Endpoint(host: "192.0.2.1", port: 5000)!
        XCTAssertEqual((0..<25).filter { _ in budget.take(source, now: start, rate: 10) }.count, 20)
        XCTAssertFalse(budget.take(source, now: start + second / 20, rate: 10), "half an answer refilled")
        XCTAssertTrue(budget.take(source, now: start + second / 10, rate: 10), "one answer refilled")
        XCTAssertFalse(budget.take(source, now: start + second / 10, rate: 10))
        let later = start + 60 * second
        XCTAssertEqual((0..<25).filter { _ in budget.take(source, now: later, rate: 10) }.count, 20, "never more than the burst")
        XCTAssertEqual((0..<100).filter { _ in budget.take(source, now: later, rate: 0) }.count, 100, "0 means no limit")
    }

    func testIPv4CountsByAddressAndIPv6BySlash64() {
        var budget = AnswerBudget()
        let drain = { (budget: inout AnswerBudget, host: String, port: UInt16) in
            for _ in 0..<2 { _ = budget.take(Endpoint(host: host, port: port)!, now: self.start, rate: 1) }
        }
        drain(&budget, "192.0.2.1", 1)
        XCTAssertFalse(budget.take(Endpoint(host: "192.0.2.1", port: 2)!, now: start, rate: 1), "another port, same address")
        XCTAssertTrue(budget.take(Endpoint(host: "192.0.2.2", port: 1)!, now: start, rate: 1))
        drain(&budget, "2001:db8:0:1::1", 1)
        XCTAssertFalse(budget.take(Endpoint(host: "2001:db8:0:1:ffff::2", port: 1)!, now: start, rate: 1), "same /64")
        XCTAssertTrue(budget.take(Endpoint(host: "2001:db8:0:2::1", port: 1)!, now: start, rate: 1), "another /64")
    }

    func testANewAddressTakesARefilledSlotBeforeADrainedOne() {
        // One set of four ways: every address meets every other.
        var budget = AnswerBudget(sets: 1)
        let victim = Endpoint(host: "192.0.2.1", port: 1)!
        let others = (2...9).map { Endpoint(host: "192.0.2.\($0)", port: 1)! }
        let takes = { (budget: inout AnswerBudget, source: Endpoint, now: UInt64) in
            (0..<25).filter { _ in budget.take(source, now: now, rate: 10) }.count
        }
        XCTAssertEqual(takes(&budget, victim, start), 20)
        for other in others[0..<3] { XCTAssertTrue(budget.take(other, now: start, rate: 10)) }
        // A second on, the three others have refilled (they owed one answer), the victim only
        // half: a newcomer takes one of theirs, and the victim keeps its state.
        let later = start + second
        XCTAssertTrue(budget.take(others[3], now: later, rate: 10))
        XCTAssertEqual(takes(&budget, victim, later), 10, "a second of refill, not a fresh burst")
        // With no slot refilled, a newcomer takes the one charged longest ago; evicted at last,
        // the victim starts over with a burst.
        for other in others[4..<8] { XCTAssertTrue(budget.take(other, now: later + 1, rate: 10)) }
        XCTAssertEqual(takes(&budget, victim, later + 2), 20)
    }

    func testTakingAllocatesNothing() {
        var budget = AnswerBudget()
        let sources = (0..<64).map { Endpoint(ipv4: 0xC000_0200 + UInt32($0), port: 9) }
        // Index loops: a for-in over the array goes through generic code that allocates in
        // debug builds, which would count the test's loop, not the budget.
        var taken = 0
        var index = 0
        malloc_counter_start()
        while index < 6400 {
            if budget.take(sources[index & 63], now: start + UInt64(index >> 6), rate: 10) { taken += 1 }
            index += 1
        }
        XCTAssertEqual(malloc_counter_stop(), 0)
        XCTAssertEqual(taken, 64 * 20, "each source its burst")
    }

    // MARK: in the TURN table

    /// An unsigned Allocate: always refused, so always inside the budget.
    private func bareAllocate() -> [UInt8] {
        var builder = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        builder.append(.requestedTransport, [17, 0, 0, 0])
        return builder.bytes
    }

    func testPastTheBudgetUnsignedRequestsAreDroppedButBindingAndSignedOnesAreAnswered() throws {
        let harness = try TurnHarness { $0.limits.unauthenticatedRate = 5 }
        // Alice learns her nonce first: this 438 is her address's first answer of ten (the
        // signed Refresh that follows is authenticated, and answered 437 outside the budget;
        // having authenticated, it earns the address two answers).
        var alice = try TurnTestClient(harness)
        XCTAssertEqual(alice.ask(.refresh)?.errorCode, 437)
        let (flooder, _) = try harness.socket()
        for _ in 0..<30 { harness.send(bareAllocate(), from: flooder, to: harness.listener) }
        _ = harness.settle(on: flooder)
        XCTAssertEqual(harness.inbox[flooder]?.count, 11, "the burst of 10, less alice's 438, plus the two she earned")
        XCTAssertEqual(harness.table.counters[drop: .unauthenticatedRate], 19)
        harness.inbox[flooder] = []

        // The address is out of answers; a Binding and alice's signed Allocate are answered.
        let binding = MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes
        XCTAssertEqual(harness.ask(binding, from: flooder)?.messageClass, .successResponse)
        XCTAssertTrue(try XCTUnwrap(alice.allocate()).isSuccess)
        // Her Allocate earned two more, which the flooder spends.
        for _ in 0..<3 { harness.send(bareAllocate(), from: flooder, to: harness.listener) }
        XCTAssertEqual(harness.settle(on: flooder), 2)
        XCTAssertEqual(harness.table.counters[drop: .unauthenticatedRate], 20)
        // A signed request that fails (a wrong password) is refused within the budget: dropped.
        alice.password = "wrong"
        harness.send(alice.signed(.refresh), from: alice.socket, to: harness.listener)
        XCTAssertEqual(harness.settle(on: alice.socket), 0)
        XCTAssertEqual(harness.table.counters[drop: .unauthenticatedRate], 21)
        // A second later the bucket has refilled.
        harness.advance(seconds: 1)
        XCTAssertEqual(harness.ask(bareAllocate(), from: flooder)?.errorCode, 401)
    }

    func testTheDropPathAllocatesNothing() throws {
        let harness = try TurnHarness { $0.limits.unauthenticatedRate = 1 }
        let (flooder, _) = try harness.socket()
        let request = bareAllocate()
        for _ in 0..<4 { harness.send(request, from: flooder, to: harness.listener) }
        _ = harness.settle(on: flooder)
        let dropped = harness.table.counters[drop: .unauthenticatedRate]
        XCTAssertEqual(dropped, 2)
        for _ in 0..<32 { harness.send(request, from: flooder, to: harness.listener) }
        var handled = 0
        malloc_counter_start()
        for _ in 0..<200 where handled < 32 {
            let count = harness.relay.receive(timeoutMilliseconds: 5)
            for index in 0..<count { harness.route(harness.relay.received(index)) }
            handled += count
        }
        let allocations = malloc_counter_stop()
        XCTAssertEqual(handled, 32)
        XCTAssertEqual(harness.table.counters[drop: .unauthenticatedRate], dropped + 32)
        XCTAssertEqual(allocations, 0)
    }
}

/// What a source earns by authenticating: credit above the burst, kept rather than refilled,
/// capped, for its own address alone; and in the TURN table, a crowd behind one address that
/// the plain budget would starve all gets its 401s within a few rounds of retransmissions.
final class AnswerCreditTests: XCTestCase {
    let second: UInt64 = 1_000_000_000
    let start: UInt64 = 1_000 * 1_000_000_000
    let nat = Endpoint(host: "203.0.113.9", port: 1)!

    private func takes(_ budget: inout AnswerBudget, _ source: Endpoint, at now: UInt64, rate: Int = 10) -> Int {
        (0..<5000).filter { _ in budget.take(source, now: now, rate: rate) }.count
    }

    func testAuthenticationsEarnAnswersAboveTheBurstForTheirAddressOnly() {
        var budget = AnswerBudget()
        XCTAssertEqual(takes(&budget, nat, at: start), 20)
        for _ in 0..<5 { budget.earn(Endpoint(host: "203.0.113.9", port: 2)!, now: start, rate: 10) }
        XCTAssertEqual(takes(&budget, nat, at: start), 10, "two answers per authentication, any port of the address")
        XCTAssertEqual(takes(&budget, Endpoint(host: "203.0.113.10", port: 1)!, at: start), 20, "a neighbour earns nothing")

        // Credit is kept, not topped up by the refill, and spent before the burst.
        for _ in 0..<3 { budget.earn(nat, now: start + 10 * second, rate: 10) }
        XCTAssertEqual(takes(&budget, nat, at: start + 70 * second), 26, "a refilled burst and the credit")

        // At most creditSeconds of the rate above the burst.
        for _ in 0..<10_000 { budget.earn(nat, now: start + 100 * second, rate: 10) }
        XCTAssertEqual(takes(&budget, nat, at: start + 100 * second), 20 + 10 * TurnLimits.creditSeconds)
        budget.earn(nat, now: start, rate: 0)
        XCTAssertEqual(takes(&budget, nat, at: start + 100 * second, rate: 0), 5000, "rate 0: no limit, nothing earned")
    }

    func testACreditedSlotIsNotForgottenBeforeAFullOne() {
        var budget = AnswerBudget(sets: 1)
        budget.earn(nat, now: start, rate: 10)
        let others = (1...3).map { Endpoint(host: "192.0.2.\($0)", port: 1)! }
        for other in others { XCTAssertTrue(budget.take(other, now: start + second, rate: 10)) }
        // Much later every other slot has refilled to its burst: a newcomer takes one of those.
        XCTAssertTrue(budget.take(Endpoint(host: "192.0.2.99", port: 1)!, now: start + 10 * second, rate: 10))
        XCTAssertEqual(takes(&budget, nat, at: start + 10 * second), 22, "the credit survived")
    }

    func testEarningAllocatesNothing() {
        var budget = AnswerBudget()
        let sources = (0..<64).map { Endpoint(ipv4: 0xC000_0200 + UInt32($0), port: 9) }
        var index = 0
        malloc_counter_start()
        while index < 6400 {
            budget.earn(sources[index & 63], now: start + UInt64(index), rate: 10)
            index += 1
        }
        XCTAssertEqual(malloc_counter_stop(), 0)
    }

    /// 60 clients on one address start at once against a burst of 10 (rate 5, the clock
    /// standing still, so nothing refills): each round, the ones still waiting send their bare
    /// Allocate together, and whoever gets a 401 signs in.
    func testACrowdBehindOneAddressGetsInWithinAFewRounds() throws {
        let harness = try TurnHarness(ports: PortBlock(count: 160)) { $0.limits.unauthenticatedRate = 5 }
        var waiting = try (0..<60).map { _ in try TurnTestClient(harness) }
        var rounds = 0
        while !waiting.isEmpty && rounds < 6 {
            rounds += 1
            for client in waiting {
                var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
                bare.append(.requestedTransport, [17, 0, 0, 0])
                harness.send(bare.bytes, from: client.socket, to: harness.listener)
            }
            _ = harness.settle(on: waiting[0].socket)
            var next: [TurnTestClient] = []
            for var client in waiting {
                let answers = harness.inbox[client.socket, default: []]
                harness.inbox[client.socket] = []
                guard let first = answers.first, let challenge = try? StunMessage(bytes: first.bytes),
                      challenge.errorCode == 401, let nonce = try? challenge.text(.nonce) else {
                    next.append(client)
                    continue
                }
                client.nonce = nonce
                let allocated = try XCTUnwrap(client.allocate())
                XCTAssertTrue(allocated.isSuccess, "round \(rounds): \(allocated.errorCode ?? 0) \(allocated.errorReason ?? "")")
            }
            waiting = next
        }
        XCTAssertEqual(waiting.count, 0, "still without a 401 after \(rounds) rounds")
        XCTAssertEqual(rounds, 3, "10, then 20, then the last 30: each client that gets in pays for two more")
        XCTAssertEqual(harness.table.counters.allocationsCreated, 60)
    }
}
