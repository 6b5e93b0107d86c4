@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import STUN
import TestPorts
@testable import TurnClientKit
import XCTest

/// --turn-unauthenticated-rate through the real executable: 20,000 Allocates without
/// credentials from one source socket get a burst and then the rate of 401s (and the two
/// answers the one request that authenticated meanwhile earned the address), the rest dropped
/// and counted; meanwhile a client on the same address that already holds its nonce allocates
/// at once (requests that authenticate are never in the budget), and after the flood a new
/// client on the same address gets its 401 and then its allocation.
final class TurnResponseBudgetTests: XCTestCase {
    static let requests = 20_000
    /// The defaults: 10 answers a second, a burst of 20.
    static let rate = 10.0
    static let burst = 20.0
    /// What a request that authenticates earns its address (AnswerBudget.earnedPerAuthentication).
    static let earned = 2.0

    /// A minimal unsigned Allocate (REQUESTED-TRANSPORT only) with transaction id `serial`.
    static func bareAllocate(_ serial: Int) -> [UInt8] {
        var builder = MessageBuilder(MessageType(.allocate, .request), transactionID: TransactionID(high: 0x4D52, low: UInt64(serial)))
        builder.append(.requestedTransport, [17, 0, 0, 0])
        return builder.bytes
    }

    static func nanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    func testAFloodGetsABurstThenTheRateWhileRealClientsOnTheSameAddressAllocate() throws {
        let turnPort = try FreePort.udp()
        // One worker: every socket of 127.0.0.1 meets the same bucket (with more, each 5-tuple
        // is hashed to one worker and each worker keeps its own buckets).
        let relay = try RelayProcess(ports: PortBlock(count: 20), [
            "--workers", "1", "--relay-address", "127.0.0.1", "--turn", "127.0.0.1:\(turnPort)", "--turn-user", "alice:secret",
        ])
        defer { XCTAssertEqual(relay.stop(), 0) }

        // A client that got its 401 before the flood: its signed Allocate goes in mid-flood.
        let early = try TurnClientFixture(serverPort: turnPort)
        early.send(Self.bareAllocate(Self.requests))
        let challenge = try XCTUnwrap(early.receive(), "no 401 before the flood")
        XCTAssertEqual(challenge.errorCode?.code, 401)
        XCTAssertTrue(early.client.learn(challenge: challenge))
        let signed = early.client.request(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }

        let flooder = try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0)
        let server = try SocketAddress(host: "127.0.0.1", port: turnPort)
        var answers = 0
        var answerBytes = 0
        var buffer = [UInt8](repeating: 0, count: 2048)
        func drainAnswers() {
            while true {
                let count = recv(flooder.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                guard count > 0 else { return }
                if let answer = try? StunMessage(bytes: Array(buffer[0..<count])), answer.errorCode?.code == 401 {
                    answers += 1
                    answerBytes += count
                }
            }
        }
        let started = Self.nanoseconds()
        let giveUp = started + 20_000_000_000
        var sent = 0
        while sent < Self.requests && Self.nanoseconds() < giveUp {
            let request = Self.bareAllocate(sent)
            let written = request.withUnsafeBytes { raw in server.withSockaddr { sendto(flooder.fd, raw.baseAddress, raw.count, 0, $0, $1) } }
            if written < 0 {
                // A full send buffer (EAGAIN): let the kernel catch up and try the same one again.
                drainAnswers()
                usleep(100)
                continue
            }
            sent += 1
            if sent == Self.requests / 2 { early.send(signed.bytes) }
            if sent % 256 == 0 { drainAnswers() }
        }
        let floodEnded = Self.nanoseconds()
        XCTAssertEqual(sent, Self.requests, "the flood did not finish in 20 s")

        // Done when the relay has accounted for every request: answered, dropped by the budget
        // or dropped by the kernel before it read them (a full receive queue). The kernel's
        // count rides on the next datagram the relay reads (SO_RXQ_OVFL), so a Binding (never
        // in the budget) goes with each look.
        let binding = MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes
        var turn: [String: Any] = [:]
        var kernelDrops = 0
        let settled = eventually {
            _ = binding.withUnsafeBytes { raw in server.withSockaddr { sendto(flooder.fd, raw.baseAddress, raw.count, 0, $0, $1) } }
            guard let stats = try? relay.stats() else { return false }
            turn = stats["turn"] as? [String: Any] ?? [:]
            kernelDrops = RelayProcess.number(stats, "drops", "kernel_overflow") ?? 0
            let challenged = RelayProcess.number(turn, "auth_failures", "challenged") ?? 0
            let dropped = RelayProcess.number(turn, "drops", "unauthenticated_rate") ?? 0
            // The early client's first Allocate was challenged too.
            return challenged - 1 + dropped + kernelDrops >= sent
        }
        let elapsed = Double(Self.nanoseconds() - started) / 1e9
        drainAnswers()
        let challenged = RelayProcess.number(turn, "auth_failures", "challenged") ?? 0
        let dropped = RelayProcess.number(turn, "drops", "unauthenticated_rate") ?? 0
        print("flood: \(sent) requests in \(String(format: "%.3f", Double(floodEnded - started) / 1e9)) s; "
              + "\(answers) answers (\(answerBytes) bytes), \(dropped) dropped by the budget, \(kernelDrops) by the kernel; "
              + "accounted for after \(String(format: "%.3f", elapsed)) s")
        XCTAssertTrue(settled, "the relay did not account for the flood: \(turn), kernel drops \(kernelDrops)")
        XCTAssertEqual(answers, challenged - 1, "every 401 the relay sent arrived, and no other")
        XCTAssertGreaterThanOrEqual(Double(answers), Self.burst - 1, "the burst is answered (less the early client's 401)")
        XCTAssertLessThanOrEqual(Double(answers), Self.burst + Self.earned + Self.rate * elapsed + 2,
                                 "more answers than a burst of 20, the early client's credit and 10 a second over \(elapsed) s")
        XCTAssertEqual(dropped, sent - kernelDrops - answers, "every request not answered is counted")

        // The early client's signed Allocate, sent with the budget spent, was answered.
        let allocated = try XCTUnwrap(early.receive(seconds: 5), "no answer to a signed Allocate during the flood")
        XCTAssertEqual(allocated.transactionID, signed.transactionID)
        XCTAssertEqual(allocated.messageClass, .successResponse)
        XCTAssertEqual(allocated.integrity(key: try XCTUnwrap(early.client.key)), .valid)

        // A new client on the same address, after the flood: its 401 within the refilled
        // budget (retransmitted if need be), then its allocation.
        let late = try TurnClientFixture(serverPort: turnPort)
        XCTAssertEqual(late.allocate()?.messageClass, .successResponse, relay.log)
        XCTAssertNotNil(late.client.nonce, "it learned its nonce from a 401")
        let after = try relay.waitFor { RelayProcess.number($0, "turn", "allocations_created") == 2 }
        XCTAssertEqual(RelayProcess.number(after, "turn", "allocations_created"), 2)
    }
}
