@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import STUN
import TestPorts
import XCTest

/// --turn-max-channels through the real executable: channels to one peer address on many
/// ports (one permission) stop at the cap with 508, counted in /v1/stats and /metrics; a
/// refresh of a bound channel still works; a reload of turn_max_channels raises the cap of the
/// running relay.
final class TurnChannelCapTests: XCTestCase {
    /// Peer ports on 127.0.0.1 that nothing else holds while the test runs: the peer address
    /// of every channel is the same, its ports differ.
    private func peerPorts(_ count: Int) throws -> (sockets: [TrafficSocket], addresses: [SocketAddress]) {
        let sockets = try (0..<count).map { _ in try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0) }
        return (sockets, sockets.map(\.localAddress))
    }

    func testTheFifthChannelGets508AndARefreshStillWorks() throws {
        let turnPort = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(count: 20), [
            "--relay-address", "127.0.0.1", "--turn", "127.0.0.1:\(turnPort)", "--turn-user", "alice:secret",
            "--turn-allowed-peer", "127.0.0.1/32", "--turn-max-channels", "4",
        ])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let client = try TurnClientFixture(serverPort: turnPort)
        XCTAssertEqual(client.allocate()?.messageClass, .successResponse, relay.log)
        let (held, peers) = try peerPorts(5)
        for (index, peer) in peers[0..<4].enumerated() {
            XCTAssertEqual(client.bind(0x4000 + UInt16(index), to: peer)?.messageClass, .successResponse, "channel \(index)")
        }
        XCTAssertEqual(client.bind(0x4004, to: peers[4])?.errorCode?.code, 508)
        XCTAssertEqual(client.bind(0x4001, to: peers[1])?.messageClass, .successResponse, "a refresh is not a new channel")

        let stats = try relay.waitFor { RelayProcess.number($0, "turn", "channels_refused") == 1 }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "channels_refused"), 1, "\(stats["turn"] ?? "no turn object")")
        XCTAssertEqual(RelayProcess.number(stats, "turn", "channels"), 4)
        let metrics = try relay.request("GET", "/metrics").text
        XCTAssertTrue(metrics.contains("mediarelay_turn_channels_refused_total{worker="), metrics)
        withExtendedLifetime(held) {}
    }

    func testAReloadRaisesTheCapOfTheRunningRelay() throws {
        let turnPort = try FreePort.udp()
        let config = try ConfigFixture(self, #"{"turn_max_channels": 1}"#)
        let relay = try RelayProcess(ports: PortBlock(count: 20), [
            "--config", config.path, "--relay-address", "127.0.0.1", "--turn", "127.0.0.1:\(turnPort)",
            "--turn-user", "alice:secret", "--turn-allowed-peer", "127.0.0.1/32",
        ])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let client = try TurnClientFixture(serverPort: turnPort)
        XCTAssertEqual(client.allocate()?.messageClass, .successResponse, relay.log)
        let (held, peers) = try peerPorts(3)
        XCTAssertEqual(client.bind(0x4000, to: peers[0])?.messageClass, .successResponse)
        XCTAssertEqual(client.bind(0x4001, to: peers[1])?.errorCode?.code, 508)

        try config.write(#"{"turn_max_channels": 2}"#)
        kill(relay.process.processIdentifier, SIGHUP)
        XCTAssertTrue(eventually { relay.log.contains("SIGHUP: reloaded") }, relay.log)
        XCTAssertTrue(relay.log.contains("turn_max_channels 1 -> 2 (new channels)"), relay.log)
        XCTAssertEqual(client.bind(0x4001, to: peers[1])?.messageClass, .successResponse, "the raised cap applies at once")
        XCTAssertEqual(client.bind(0x4002, to: peers[2])?.errorCode?.code, 508, "and it is the file's value")
        withExtendedLifetime(held) {}
    }
}
