import Foundation
import Glibc
@testable import LoadGen
import STUN
import TestPorts
import XCTest

/// Many TURN clients behind one address (issue 32: an office, a school, a carrier-grade NAT),
/// through the real executable with its default options (two workers here, the answer budget at
/// its default): every client's first Allocate needs a 401, and the budget lets the address
/// earn them as its clients authenticate.
final class TurnCrowdTests: XCTestCase {
    /// 200 clients of the load generator from 127.0.0.1 at once: all allocate, and every
    /// datagram comes back both ways.
    func testTwoHundredClientsFromOneAddressAllAllocateAndRelay() throws {
        let turnPort = try freeUDPPort()
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
        let turnPort = try freeUDPPort()
        let relay = try RelayProcess(ports: PortBlock(count: 500), ["--turn", "127.0.0.1:\(turnPort)", "--turn-user", "crowd:pw"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let server = try SocketAddress(host: "127.0.0.1", port: turnPort)
        let transactions = TurnTransactions(answers: .sockets, interruptible: false)
        let started = Date()
        var allocated = 0
        for wave in 0..<10 {
            let clients = try (0..<200).map { _ in
                TurnClient(socket: try LoadGen.UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0),
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
}
