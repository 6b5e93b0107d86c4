import Foundation
import Glibc
@testable import LoadGen
import XCTest

/// The relay's own backlog (README "ECN marking"), made on purpose and read from outside its
/// engine: the real relay process is stopped (SIGSTOP) while the load generator's sockets
/// (IndependentPeer) send it ECT(1), ECT(0), Not-ECT and CE datagrams, which wait in its
/// sockets' queues for 150 ms, far past the default thresholds (1 ms for ECT(1), 5 ms for
/// ECT(0); --ecn-backlog on); then it runs again (SIGCONT). ECT datagrams leave CE, DSCP kept; Not-ECT and CE
/// leave as they came; the marks are counted as `backlog` on the session's leg, on the TURN
/// allocation, and in /v1/stats and /metrics. A session with "ecn_marking": "off", a relay with
/// --ecn-marking off and one with --ecn-backlog off mark nothing. On every backend.
final class StoppedRelayBacklogTests: XCTestCase {
    let host = "127.0.0.1"
    /// Datagrams of each kind sent while the relay is stopped: 12 of each codepoint.
    let count = 48

    func testDatagramsThatWaitedInAStoppedRelayLeaveMarkedAndCounted() throws {
        for backend in ["perpacket", "mmsg", "uring"] {
            let fixture = try TurnServerFixture(hosts: [host], ["--engine", backend, "--workers", "1", "--ecn-backlog", "on"])
            defer { XCTAssertEqual(fixture.relay.stop(), 0) }
            XCTAssertTrue(fixture.relay.log.contains("backlog: ECT(1) after 1000 us"), fixture.relay.log)
            let marked = try StoppedRelay.Session(fixture.relay, host: host)
            let unmarked = try StoppedRelay.Session(fixture.relay, host: host, #"{"ecn_marking": "off"}"#)
            let allocation = try fixture.allocate(on: host)
            let turn = StoppedRelay.Flow.channel(allocation)

            try StoppedRelay.hold(fixture.relay, while: [marked.flow, unmarked.flow, turn], count: count)
            StoppedRelay.assertECTMarked(marked.flow.received(count), count, "\(backend) session")
            StoppedRelay.assertUntouched(unmarked.flow.received(count), count, "\(backend) session, ecn_marking off")
            StoppedRelay.assertECTMarked(turn.received(count), count, "\(backend) TURN allocation")

            let ect = UInt64(count / 2)
            XCTAssertEqual(try marked.backlogMarks(), Int(ect), "\(backend): ce_marked of the leg the datagrams came to")
            XCTAssertEqual(try unmarked.backlogMarks(), 0, "\(backend)")
            let listed = try fixture.relay.request("GET", "/v1/turn/allocations").json?["allocations"] as? [[String: Any]] ?? []
            XCTAssertEqual(listed.compactMap { RelayProcess.number($0, "ce_marked", "backlog") }.reduce(0, +), Int(ect),
                           "\(backend): ce_marked of the allocation")
            let stats = try fixture.relay.waitFor { RelayProcess.number($0, "ce_marked", "backlog") == Int(2 * ect) }
            XCTAssertEqual(RelayProcess.number(stats, "ce_marked", "backlog"), Int(2 * ect), "\(backend): /v1/stats")
            XCTAssertEqual(RelayProcess.number(stats, "turn", "ce_marked", "backlog"), Int(ect), "\(backend): /v1/stats turn")
            XCTAssertEqual(RelayProcess.number(stats, "ce_marked", "rate_limit"), 0)
            let metrics = try fixture.relay.request("GET", "/metrics").text
            XCTAssertTrue(metrics.contains(#"mediarelay_ce_marks_total{worker="0",cause="backlog"} \#(2 * ect)"#),
                          "\(backend): /metrics\n\(metrics)")
        }
    }

    func testNothingIsMarkedWithMarkingOrBacklogOff() throws {
        for flags in [["--ecn-marking", "off", "--ecn-backlog", "on"], ["--ecn-backlog", "off"]] {
            let fixture = try TurnServerFixture(hosts: [host], ["--engine", "uring", "--workers", "1"] + flags)
            defer { XCTAssertEqual(fixture.relay.stop(), 0) }
            let session = try StoppedRelay.Session(fixture.relay, host: host)
            let turn = StoppedRelay.Flow.channel(try fixture.allocate(on: host))
            try StoppedRelay.hold(fixture.relay, while: [session.flow, turn], count: count)
            StoppedRelay.assertUntouched(session.flow.received(count), count, "\(flags) session")
            StoppedRelay.assertUntouched(turn.received(count), count, "\(flags) TURN allocation")
            let stats = try fixture.relay.waitFor { RelayProcess.number($0, "packets_out") ?? 0 >= 2 * count }
            XCTAssertEqual(RelayProcess.number(stats, "ce_marked", "backlog"), 0, "\(flags)")
        }
    }
}

/// The steps of a test against a relay held stopped (SIGSTOP) while datagrams queue up for it.
enum StoppedRelay {
    /// Datagrams sent by one peer towards the relay and read by another: `send(payload, tos)`,
    /// `read(expected)` with the TOS byte each arrived with.
    struct Flow {
        let send: ([UInt8], UInt8) throws -> Void
        let read: (Int) -> [(payload: [UInt8], tos: UInt8)]

        /// What arrived of `count` sent, by the number each carries in its first byte.
        func received(_ count: Int) -> [Int: UInt8] {
            var arrivals: [Int: UInt8] = [:]
            for arrival in read(count) where arrival.payload.count == 8 && arrival.payload[1] == 0x42 {
                arrivals[Int(arrival.payload[0])] = arrival.tos
            }
            return arrivals
        }

        /// ChannelData from an allocation's client to its channel's peer.
        static func channel(_ allocation: TurnServerFixture.Allocation) -> Flow {
            let channel = TurnServerFixture.Allocation.channel
            return Flow(
                send: { payload, tos in
                    let header = [UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
                    try allocation.client.send(header + payload, tos: tos, to: allocation.server)
                },
                read: { expected in
                    allocation.channelPeer.receive(expected: expected, seconds: 10)
                        .filter { $0.source.description == allocation.relayed.description }.map { ($0.bytes, $0.tos) }
                })
        }
    }

    /// A two-leg session whose leg B a receiver has latched: datagrams sent to leg A reach it.
    struct Session {
        let relay: RelayProcess
        let id: String
        let flow: Flow

        init(_ relay: RelayProcess, host: String, _ body: String = "{}") throws {
            let session = try relay.createSession(body)
            let sender = try IndependentPeer(host: host)
            let receiver = try IndependentPeer(host: host)
            try receiver.send([0], tos: 0, to: host, port: session.legs[1].port)
            try relay.waitForLatch(session: session.id, leg: 1)
            let legs = session.legs.map(\.port)
            self.relay = relay
            id = session.id
            flow = Flow(send: { try sender.send($0, tos: $1, to: host, port: legs[0]) },
                        read: { expected in
                            receiver.receive(expected: expected).filter { $0.source.port == legs[1] }.map { ($0.bytes, $0.tos) }
                        })
        }

        /// ce_marked.backlog of leg A, once the relay has published it.
        func backlogMarks() throws -> Int? {
            let info = try relay.waitFor("/v1/sessions/\(id)") { _ in true }
            return RelayProcess.number((info["legs"] as? [[String: Any]])?.first ?? [:], "ce_marked", "backlog")
        }
    }

    /// Stops the relay, sends `count` datagrams on every flow (cycling through
    /// CodepointFlowHarness.marks), keeps it stopped 150 ms, and lets it go on.
    static func hold(_ relay: RelayProcess, while flows: [Flow], count: Int) throws {
        let pid = relay.process.processIdentifier
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        defer { kill(pid, SIGCONT) }
        // Until the kernel says it is stopped, a datagram could still be read at once.
        XCTAssertTrue(eventually(seconds: 5) { (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.contains(") T ") == true })
        for number in 0..<count {
            for flow in flows {
                try flow.send([UInt8(number), 0x42, 0, 0, 0, 0, 0, 0], CodepointFlowHarness.marks[number % 4])
            }
        }
        usleep(150_000)
    }

    /// Every datagram arrived; ECT(1) and ECT(0) as CE with their DSCP, Not-ECT and CE as sent.
    static func assertECTMarked(_ arrivals: [Int: UInt8], _ count: Int, _ label: String,
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(arrivals.count, count, "\(label): lost", file: file, line: line)
        for (number, tos) in arrivals {
            let sent = CodepointFlowHarness.marks[number % 4]
            let expected = sent & 3 == 1 || sent & 3 == 2 ? sent | 3 : sent
            XCTAssertEqual(tos, expected, "\(label): \(CodepointFlowHarness.names[number % 4]) #\(number)", file: file, line: line)
        }
    }

    /// Every datagram arrived as it was sent.
    static func assertUntouched(_ arrivals: [Int: UInt8], _ count: Int, _ label: String,
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(arrivals.count, count, "\(label): lost", file: file, line: line)
        for (number, tos) in arrivals {
            XCTAssertEqual(tos, CodepointFlowHarness.marks[number % 4], "\(label): \(CodepointFlowHarness.names[number % 4]) #\(number)",
                           file: file, line: line)
        }
    }
}
