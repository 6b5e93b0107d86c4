import Foundation
import Glibc
@testable import LoadGen
import TestSupport
import XCTest

/// A session leg with a byte limit, forwarded on credit by the kernel fast path, marks and
/// drops as the user-space policer does: two relays side by side in one namespace
/// (FastPathNetwork), one with `--fast-path tc` and one with it off, each with one session at
/// 1.5x of its leg's limit, fed by the same paced loop (CodepointFlowHarness: ECT(1), ECT(0),
/// Not-ECT and CE in turn) for 3 s.
final class FastPathLimitTests: XCTestCase {
    static let seconds = 3.0
    /// 600 datagrams/s of 100 bytes against 40,000 bytes/s: 1.5x.
    static let rate = 600.0
    static let body = #"{"max_bytes_per_second": 40000}"#

    func testAByteLimitedLegMarksAndDropsAsInUserSpace() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        let family = FastPathNetwork.ipv4
        var relays: [RelayProcess] = []
        defer { for relay in relays { XCTAssertEqual(relay.stop(), 0) } }
        var flows: [CodepointFlowHarness.Flow] = []
        var sessions: [String] = []
        for mode in ["tc", "off"] {
            let relay = try network.startRelay(fastPath: mode, [])
            relays.append(relay)
            let session = try network.createSession(relay, Self.body)
            let sender = try network.inside(.client) { try IndependentPeer(host: family.client) }
            let receiver = try network.inside(.peer) { try IndependentPeer(host: family.peer) }
            try receiver.send([0], tos: 0, to: family.back, port: session.ports[1])
            try network.inside(.relay) { try relay.waitForLatch(session: session.id, leg: 1) }
            flows.append(CodepointFlowHarness.session("1.5x bytes, fast path \(mode)", rate: Self.rate, host: family.front,
                                                      legs: session.ports, sender: sender, receiver: receiver))
            sessions.append(session.id)
        }
        let before = try network.kernel(relays[0])
        let outcomes = try CodepointFlowHarness.run(flows, seconds: Self.seconds)
        let after = try network.kernel(relays[0])
        for (index, outcome) in outcomes.enumerated() {
            CodepointFlowHarness.assertMarkedPastTheLimit(outcome, flows[index].name)
            // The kernel never marks: every CE the receiver saw was set by the leg's policer,
            // which counts it.
            let legs = try network.legs(relays[index], session: sessions[index])
            XCTAssertEqual(RelayProcess.number(legs.first ?? [:], "ce_marked", "rate_limit"), outcome[0].markedCE + outcome[1].markedCE,
                           "\(flows[index].name): ce_marked")
        }
        // The kernel carried the part the bucket passed unmarked, and handed the rest back.
        XCTAssertGreaterThan(after.datagrams - before.datagrams, 0, "the kernel carried none of the limited leg")
        XCTAssertGreaterThan(after.handedBack("credit") - before.handedBack("credit"), 0, "\(after.handedBack)")

        let (kernel, user) = (outcomes[0], outcomes[1])
        let arrived = (kernel.reduce(0) { $0 + $1.arrived }, user.reduce(0) { $0 + $1.arrived })
        let marked = (kernel[0].markedCE + kernel[1].markedCE, user[0].markedCE + user[1].markedCE)
        print("FastPathLimitTests: arrived \(arrived.0) (tc) against \(arrived.1) (off) of \(kernel.reduce(0) { $0 + $1.sent }); "
              + "CE on ECT(1)+ECT(0) \(marked.0) against \(marked.1); per codepoint arrived \(kernel.map(\.arrived)) against "
              + "\(user.map(\.arrived)), marked \(kernel.map(\.markedCE)) against \(user.map(\.markedCE))")
        // What the bucket drops does not depend on chance: the totals agree to within 1% of
        // what was sent (a bucket that loses a turn's refill to the kernel's spending falls
        // well outside). Which codepoint a drop hits follows the sender's phase, and marks are
        // random draws along the ramp: those get about three times the spread seen between runs.
        XCTAssertEqual(Double(arrived.0), Double(arrived.1), accuracy: 18, "datagrams delivered, fast path tc against off")
        for codepoint in 0..<4 {
            XCTAssertEqual(Double(kernel[codepoint].arrived), Double(user[codepoint].arrived), accuracy: 25,
                           "\(CodepointFlowHarness.names[codepoint]) delivered, fast path tc against off")
        }
        XCTAssertEqual(Double(marked.0), Double(marked.1), accuracy: 35, "ECT datagrams marked CE, fast path tc against off")
    }
}
