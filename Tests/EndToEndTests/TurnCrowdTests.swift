import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import STUN
import TestPorts
@testable import TurnClientKit
import XCTest

/// Many TURN clients behind one address (issue 32: an office, a school, a carrier-grade NAT),
/// through the real executable with its default options (two workers here, the answer budget at
/// its default): every client's first Allocate needs a 401, and the budget lets the address
/// earn them as its clients authenticate.
final class TurnCrowdTests: XCTestCase {
    /// 200 clients of the load generator from 127.0.0.1 at once: all allocate, and every
    /// datagram comes back both ways.
    func testTwoHundredClientsFromOneAddressAllAllocateAndRelay() throws {
        let turnPort = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(count: 500), ["--turn", "127.0.0.1:\(turnPort)", "--turn-user", "crowd:pw",
                                                                   "--turn-allowed-peer", "127.0.0.1/32"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let object = try LoadGeneratorTests.runLoad([
            "--turn", "127.0.0.1:\(turnPort)", "--turn-user", "crowd:pw", "--streams", "200", "--rate", "2000",
            "--seconds", "1", "--warmup", "0", "--bidirectional", "--drain", "5",
        ])
        XCTAssertEqual(object["latched_streams"] as? Int, 200)
        let sent = try XCTUnwrap(object["sent"] as? Int)
        XCTAssertGreaterThan(sent, 0)
        XCTAssertEqual(object["received"] as? Int, sent, "every datagram, both ways")
        let stats = try relay.waitFor { RelayProcess.number($0, "turn", "allocations_created") ?? 0 >= 200 }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "allocations_created"), 200)
    }

    /// 2,000 clients from 127.0.0.1 over a few seconds, in waves of 200 that allocate together
    /// and release: every one gets its 401 and its allocation.
    func testTwoThousandClientsFromOneAddressOverAFewSeconds() throws {
        let turnPort = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(count: 500), ["--turn", "127.0.0.1:\(turnPort)", "--turn-user", "crowd:pw"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let server = try SocketAddress(host: "127.0.0.1", port: turnPort)
        let transactions = TurnTransactions(answers: .sockets, interruptible: false)
        let started = Date()
        var allocated = 0
        for wave in 0..<10 {
            let clients = try (0..<200).map { _ in
                TurnAllocationClient(socket: try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0),
                           server: server, username: "crowd", password: "pw")
            }
            let answers = transactions.run(clients, .allocate) { _, builder in builder.append(.requestedTransport, [17, 0, 0, 0]) }
            let granted = answers.filter { $0?.messageClass == .successResponse }.count
            XCTAssertEqual(granted, 200, "wave \(wave): \(answers.compactMap { $0?.errorCode?.code }) refused, \(answers.filter { $0 == nil }.count) unanswered")
            allocated += granted
            let released = transactions.run(clients, .refresh) { _, builder in builder.append(.lifetime, uint32: 0) }
            XCTAssertEqual(released.filter { $0?.messageClass == .successResponse }.count, 200, "wave \(wave) released")
        }
        let seconds = Date().timeIntervalSince(started)
        print("2,000 clients from one address: \(allocated) allocated in \(String(format: "%.2f", seconds)) s")
        XCTAssertEqual(allocated, 2000)
        let stats = try relay.waitFor { RelayProcess.number($0, "turn", "allocations_created") ?? 0 >= 2000 }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "allocations_created"), 2000)
        // 128 bare Allocates at once outrun a burst of 20 per worker: the budget was at work.
        XCTAssertGreaterThan(RelayProcess.number(stats, "turn", "drops", "unauthenticated_rate") ?? 0, 0)
    }

    /// A flood of 20,000 unsigned Allocates a second for two seconds from one address (eight
    /// source ports, so every worker meets it), nobody on that address authenticating: the
    /// answers that reach the flooding sockets stay within each worker's burst and rate.
    func testAFloodFromOneAddressIsAnsweredWithinTheBudget() throws {
        let turnPort = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(count: 20), ["--turn", "127.0.0.1:\(turnPort)", "--turn-user", "crowd:pw"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let workers = Double(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let server = try SocketAddress(host: "127.0.0.1", port: turnPort)
        let sockets = try (0..<8).map { _ in try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0) }
        var answers = 0
        var answerBytes = 0
        var buffer = [UInt8](repeating: 0, count: 2048)
        func drain() {
            for socket in sockets {
                while case let count = recv(socket.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)), count > 0 {
                    answers += 1
                    answerBytes += count
                }
            }
        }
        let perMillisecond = 20
        let started = TurnResponseBudgetTests.nanoseconds()
        var sent = 0
        for millisecond in 0..<2000 {
            for _ in 0..<perMillisecond {
                let request = TurnResponseBudgetTests.bareAllocate(sent)
                let socket = sockets[sent % sockets.count]
                _ = request.withUnsafeBytes { raw in server.withSockaddr { sendto(socket.fd, raw.baseAddress, raw.count, 0, $0, $1) } }
                sent += 1
            }
            drain()
            let due = started + UInt64(millisecond + 1) * 1_000_000
            while TurnResponseBudgetTests.nanoseconds() < due { usleep(100) }
        }
        // Answers still on their way after the last request.
        let ended = TurnResponseBudgetTests.nanoseconds()
        while TurnResponseBudgetTests.nanoseconds() < ended + 300_000_000 {
            drain()
            usleep(10_000)
        }
        let seconds = Double(TurnResponseBudgetTests.nanoseconds() - started) / 1e9
        let bound = workers * (TurnResponseBudgetTests.burst + TurnResponseBudgetTests.rate * seconds)
        print("flood from one address: \(sent) requests in \(String(format: "%.2f", Double(ended - started) / 1e9)) s, "
              + "\(answers) answers (\(answerBytes) bytes) in \(String(format: "%.2f", seconds)) s; bound \(Int(bound)) "
              + "(\(Int(workers)) workers x (20 + 10/s))")
        XCTAssertGreaterThanOrEqual(answers, Int(TurnResponseBudgetTests.burst), "at least one worker's burst is answered")
        XCTAssertLessThanOrEqual(Double(answers), bound, "more than each worker's burst and rate")
        XCTAssertLessThanOrEqual(answerBytes, answers * 120, "each answer a 401 of about 116 bytes")
        let stats = try relay.waitFor { RelayProcess.number($0, "turn", "drops", "unauthenticated_rate") ?? 0 > 0 }
        XCTAssertGreaterThan(RelayProcess.number(stats, "turn", "drops", "unauthenticated_rate") ?? 0, sent / 2)
    }
}
