import Foundation
import Glibc
import XCTest

/// Paced flows of datagrams that cycle through the four ECN codepoints (DSCP AF41 on each), sent
/// and read by the load generator's sockets (IndependentPeer): what comes out of the relay is
/// read as the kernel delivered it, so a mark the relay set is seen from outside its engine.
///
/// Every flow sends at its own rate from one paced loop on the test's thread (the receiving
/// sockets' 4 MiB buffers hold everything until the run ends), then each flow's receiver is
/// read. Payload: `M`, the flow's tag, the datagram's number (16 bits), then zeros to `size`.
enum CodepointFlowHarness {
    /// TOS bytes in the order sent: ECT(1), ECT(0), Not-ECT, CE, all with DSCP AF41 (34).
    static let marks: [UInt8] = [34 << 2 | 1, 34 << 2 | 2, 34 << 2 | 0, 34 << 2 | 3]
    static let names = ["ECT(1)", "ECT(0)", "Not-ECT", "CE"]

    /// One flow: its rate, the size of its datagrams and how to send and read them.
    struct Flow {
        let name: String
        let rate: Double
        var size = 100
        /// Sends one payload with a TOS byte.
        let send: ([UInt8], UInt8) throws -> Void
        /// Everything that arrived (payloads as the receiver unframed them, with their TOS),
        /// waiting at most until `deadline` for `expected` of them.
        let receive: (_ expected: Int, _ deadline: Date) -> [(payload: [UInt8], tos: UInt8)]
    }

    /// What one flow's datagrams of one codepoint became.
    struct Outcome {
        var sent = 0
        var arrived = 0
        /// Arrived CE though sent as another codepoint: marks the relay set.
        var markedCE = 0
        /// The number (in this codepoint's own order) of the first datagram that arrived marked.
        var firstMark: Int?
        /// Arrived with a codepoint that is neither the one sent nor CE, or another DSCP.
        var altered = 0

        var markedShare: Double { arrived == 0 ? 0 : Double(markedCE) / Double(arrived) }
    }

    /// Runs every flow for `seconds` at once; the outcome of each, by codepoint (`marks` order).
    static func run(_ flows: [Flow], seconds: Double) throws -> [[Outcome]] {
        var sent = [Int](repeating: 0, count: flows.count)
        let start = Date()
        while true {
            let elapsed = Date().timeIntervalSince(start)
            var done = true
            for (index, flow) in flows.enumerated() {
                let total = Int(flow.rate * seconds)
                let due = min(total, Int(flow.rate * elapsed) + 1)
                while sent[index] < due {
                    let number = sent[index]
                    var payload = [UInt8](repeating: 0, count: flow.size)
                    payload[0] = 0x4D
                    payload[1] = UInt8(index)
                    payload[2] = UInt8(number >> 8)
                    payload[3] = UInt8(number & 0xFF)
                    try flow.send(payload, marks[number % marks.count])
                    sent[index] += 1
                }
                if sent[index] < total { done = false }
            }
            if done { break }
            usleep(500)
        }
        let deadline = Date().addingTimeInterval(1.5)
        return flows.enumerated().map { index, flow in
            var outcomes = [Outcome](repeating: Outcome(), count: marks.count)
            for number in 0..<sent[index] { outcomes[number % marks.count].sent += 1 }
            for arrival in flow.receive(sent[index], deadline) {
                let payload = arrival.payload
                guard payload.count == flow.size, payload[0] == 0x4D, payload[1] == UInt8(index) else { continue }
                let number = Int(payload[2]) << 8 | Int(payload[3])
                let codepoint = number % marks.count
                let sentTOS = marks[codepoint]
                outcomes[codepoint].arrived += 1
                if arrival.tos != sentTOS {
                    if arrival.tos == sentTOS | 3 {
                        outcomes[codepoint].markedCE += 1
                        let order = number / marks.count
                        outcomes[codepoint].firstMark = min(outcomes[codepoint].firstMark ?? order, order)
                    } else {
                        outcomes[codepoint].altered += 1
                    }
                }
            }
            return outcomes
        }
    }

    /// A session's flow: from `sender` to leg A, read at `receiver`, which latched leg B.
    static func session(_ name: String, rate: Double, size: Int = 100, host: String, legs: [UInt16],
                        sender: IndependentPeer, receiver: IndependentPeer) -> Flow {
        Flow(name: name, rate: rate, size: size,
             send: { try sender.send($0, tos: $1, to: host, port: legs[0]) },
             receive: { expected, deadline in
                 receiver.receive(expected: expected, seconds: max(0.05, deadline.timeIntervalSinceNow))
                     .filter { $0.source.port == legs[1] }.map { ($0.bytes, $0.tos) }
             })
    }

    /// A TURN allocation's flow: ChannelData on its channel from its client, read bare at the
    /// channel's peer as it comes from the relayed address.
    static func channelData(_ name: String, rate: Double, allocation: TurnServerFixture.Allocation) -> Flow {
        let channel = TurnServerFixture.Allocation.channel
        return Flow(name: name, rate: rate,
                    send: { payload, tos in
                        let header = [UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
                        try allocation.client.send(header + payload, tos: tos, to: allocation.server)
                    },
                    receive: { expected, deadline in
                        allocation.channelPeer.receive(expected: expected, seconds: max(0.05, deadline.timeIntervalSinceNow))
                            .filter { $0.source.description == allocation.relayed.description }.map { ($0.bytes, $0.tos) }
                    })
    }

    /// The expectations every run shares, for one flow's outcomes: nothing altered but by CE
    /// (ECT(0) and ECT(1) never swapped, DSCP untouched), Not-ECT and CE never marked.
    static func assertOnlyECTMarked(_ outcomes: [Outcome], _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        for (codepoint, outcome) in outcomes.enumerated() {
            XCTAssertEqual(outcome.altered, 0, "\(label) \(names[codepoint]): arrived with another mark", file: file, line: line)
        }
        XCTAssertEqual(outcomes[2].markedCE, 0, "\(label): Not-ECT marked", file: file, line: line)
        XCTAssertEqual(outcomes[3].markedCE, 0, "\(label): CE is already CE", file: file, line: line)
    }

    /// Under the limit: everything arrives and nothing is marked.
    static func assertUntouched(_ outcomes: [Outcome], _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        assertOnlyECTMarked(outcomes, label, file: file, line: line)
        for (codepoint, outcome) in outcomes.enumerated() {
            XCTAssertEqual(outcome.markedCE, 0, "\(label) \(names[codepoint]): marked under the limit", file: file, line: line)
            XCTAssertEqual(outcome.arrived, outcome.sent, "\(label) \(names[codepoint]): lost under the limit", file: file, line: line)
        }
    }

    /// Past the limit with marking on: both ECT codepoints marked, ECT(1) first and most; every
    /// codepoint dropped once the bucket ran dry.
    static func assertMarkedPastTheLimit(_ outcomes: [Outcome], _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        assertOnlyECTMarked(outcomes, label, file: file, line: line)
        let ect1 = outcomes[0], ect0 = outcomes[1]
        XCTAssertGreaterThan(ect1.markedCE, 0, "\(label): ECT(1) never marked", file: file, line: line)
        XCTAssertGreaterThan(ect0.markedCE, 0, "\(label): ECT(0) never marked", file: file, line: line)
        XCTAssertLessThan(ect1.firstMark ?? .max, ect0.firstMark ?? .max, "\(label): ECT(1) not marked first", file: file, line: line)
        XCTAssertGreaterThan(ect1.markedShare, ect0.markedShare, "\(label): ECT(1) not marked more", file: file, line: line)
    }

    /// Past the limit with marking off: drops, and no mark at all.
    static func assertDroppedUnmarked(_ outcomes: [Outcome], _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        assertOnlyECTMarked(outcomes, label, file: file, line: line)
        for (codepoint, outcome) in outcomes.enumerated() {
            XCTAssertEqual(outcome.markedCE, 0, "\(label) \(names[codepoint]): marked with marking off", file: file, line: line)
        }
        XCTAssertLessThan(outcomes.reduce(0) { $0 + $1.arrived }, outcomes.reduce(0) { $0 + $1.sent }, "\(label): nothing dropped",
                          file: file, line: line)
    }
}
