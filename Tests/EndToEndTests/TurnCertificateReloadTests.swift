import ClientSockets
import Foundation
import Glibc
import LoadGen
import NetAddress
import TestPorts
import TestSupport
import XCTest

/// The TLS listeners' certificate through the real executable: SIGHUP serves a renewed pair to
/// new connections while an open one keeps relaying on its session; a pair that does not match
/// is refused whole, said in one line naming the files, and the running one stays; at start-up
/// such a pair stops the relay.
final class TurnCertificateReloadTests: XCTestCase {
    func testSighupServesTheNewCertificateToNewConnectionsWhileAnOpenOneKeepsRelaying() throws {
        let server = try TurnStreamServerFixture()
        let certificates = server.certificates
        let context = try server.clientContext()
        let peer = try IndependentPeer(host: "127.0.0.1")
        let open = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: server.tlsPort)!, tls: context)
        XCTAssertEqual(open.peerCertificateSerial, certificates.server.serial)
        let relayed = try open.allocate(channel: 0x4000, to: Endpoint(host: "127.0.0.1", port: peer.port)!)
        try assertRelaysBothWays(open, peer, relayed, round: 1)

        // A renewal: the new pair in place of the old, then SIGHUP.
        try server.install(certificate: certificates.secondServer.certificate, key: certificates.secondServer.key)
        XCTAssertTrue(server.reload(expecting: "serial \(certificates.secondServer.serial)"), server.relay.log)
        let renewed = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: server.tlsPort)!, tls: context)
        XCTAssertEqual(renewed.peerCertificateSerial, certificates.secondServer.serial, "a new connection gets the new certificate")
        try assertRelaysBothWays(open, peer, relayed, round: 2)
        XCTAssertEqual(open.peerCertificateSerial, certificates.server.serial, "the open connection keeps its session")

        // A key that belongs to no certificate: refused whole, the renewed pair stays.
        try server.install(certificate: certificates.server.certificate, key: certificates.mismatchedKey)
        XCTAssertTrue(server.reload(expecting: "keeping the running certificate"), server.relay.log)
        let refusal = try XCTUnwrap(server.relay.log.split(separator: "\n").last { $0.contains("keeping the running certificate") })
        XCTAssertTrue(refusal.contains("SIGHUP") && refusal.contains(server.keyPath), String(refusal))
        let afterRefusal = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: server.tlsPort)!, tls: context)
        XCTAssertEqual(afterRefusal.peerCertificateSerial, certificates.secondServer.serial, "the refused pair was not taken")
        try assertRelaysBothWays(open, peer, relayed, round: 3)

        let stats = try server.relay.waitFor { RelayProcess.number($0, "turn", "transports", "tls", "handshakes", "completed") == 3 }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "transports", "tls", "handshakes", "completed"), 3, "\(stats)")
        XCTAssertEqual(RelayProcess.number(stats, "turn", "transports", "tls", "allocations_created"), 1)
        XCTAssertTrue(server.relay.process.isRunning)
    }

    func testStartUpWithAKeyThatDoesNotMatchStopsWithOneLineNamingIt() throws {
        let certificates = try CertificateFixture()
        let ports = try PortBlock(count: 10)
        let arguments = TurnStreamServerFixture.arguments(
            udp: try FreePort.udp(), tcp: try FreePort.tcp(), tls: try FreePort.tcp(),
            certificate: certificates.server.certificate, key: certificates.mismatchedKey)
        let (status, stderr) = try RelayProcess.runToExit(arguments + ["--http", "127.0.0.1:0", "--ports", ports.argument])
        XCTAssertNotEqual(status, 0, stderr)
        let lines = stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, stderr)
        XCTAssertTrue(lines.first?.contains(certificates.mismatchedKey) ?? false, stderr)
    }

    /// Ten datagrams each way through `client`'s channel 0x4000 and its relayed address,
    /// tagged with `round` so that none of another round counts.
    private func assertRelaysBothWays(_ client: StreamTurnClient, _ peer: IndependentPeer, _ relayed: Endpoint, round: UInt8,
                                      file: StaticString = #filePath, line: UInt = #line) throws {
        let payloads = (0..<10).map { [0x52, round, UInt8($0)] }
        for payload in payloads { client.write(paddedChannelData(0x4000, payload)) }
        let arrived = peer.receive(expected: payloads.count).map(\.bytes)
        XCTAssertEqual(arrived, payloads, "client to peer, round \(round)", file: file, line: line)
        let relayedAddress = try SocketAddress(host: relayed.hostText, port: relayed.port)
        for payload in payloads { try peer.send(payload, tos: 0, to: relayedAddress) }
        var back: [[UInt8]] = []
        while back.count < payloads.count, let message = client.readMessage(seconds: 10) { back.append(message) }
        XCTAssertEqual(back, payloads.map { [0x40, 0x00, 0, 3] + $0 }, "peer to client as ChannelData, round \(round)", file: file, line: line)
    }
}
