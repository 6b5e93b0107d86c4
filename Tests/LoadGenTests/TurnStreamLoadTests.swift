@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import STUN
import SystemSupport
import TestPorts
import TestSupport
import XCTest

/// The load generator's TURN clients over TCP and over TLS (`--turn-transport tcp|tls`) against
/// coturn's real `turnserver` on loopback: each client on its own connection, data as
/// ChannelData and as Send indications to coturn's `turnutils_peer`, which echoes every
/// datagram back through the relay: none may be lost. The relayed side is UDP throughout.
///
/// A datagram that comes back on a stream has no marks the client could see, so these runs
/// report it as received without marks (coturn, for its part, sends what a stream client relays
/// with TOS 0: there is no datagram's TOS byte to copy).
final class TurnStreamLoadTests: XCTestCase {
    override func setUpWithError() throws {
        try HostRequirement.requireTools(["/usr/bin/turnserver", EchoPeerFixture.tool])
    }

    private static let credentials = CoturnServer.Credentials.user(name: "load", password: "pw")

    private func run(_ server: String, _ transport: TurnTransport, _ configure: (inout LoadOptions) -> Void) throws -> LoadResult {
        var o = TurnRunFixture.options(server: server, credential: .user(name: "load", password: "pw"))
        o.turnTransport = transport
        o.profile = .voice
        configure(&o)
        return try LoadRun(options: o, log: { _ in }).run()
    }

    /// Every datagram sent came back from the echo peer, on the clients' connections.
    private func assertEchoedWhole(_ r: LoadResult, _ transport: TurnTransport, clients: Int = 4,
                                   file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.turnTransport, transport, file: file, line: line)
        XCTAssertEqual(r.latchedStreams, clients, "every allocation echoed its latching datagram", file: file, line: line)
        XCTAssertGreaterThan(r.sent, 0, file: file, line: line)
        XCTAssertEqual(r.received, r.sent, "every datagram came back", file: file, line: line)
        XCTAssertEqual(r.lost, 0, file: file, line: line)
        XCTAssertEqual(r.duplicated, 0, file: file, line: line)
        XCTAssertEqual(r.foreign, 0, "framing stripped, answers to refreshes not counted as data", file: file, line: line)
        XCTAssertEqual(r.turnFailedClients, 0, r.turnFailure ?? "", file: file, line: line)
        XCTAssertEqual(r.receivedWithoutMarks, r.received, "all of it came back on the streams", file: file, line: line)
    }

    func testTCPChannelDataEchoedWhole() throws {
        let coturn = try CoturnServer(credentials: Self.credentials, realm: "turnload.test", relayPorts: PortBlock(count: 10))
        let peer = try EchoPeerFixture()
        let r = try run(coturn.address, .tcp) {
            $0.turnPeer = peer.address
            $0.relayPID = coturn.pid
        }
        assertEchoedWhole(r, .tcp)
        XCTAssertFalse(r.turnSendIndications)
        XCTAssertEqual(r.turnEchoPeer, peer.address)
        XCTAssertNotNil(r.relayProcCPUNsPerDatagram, "--relay-pid reads coturn's CPU from /proc")
    }

    func testTCPSendIndicationsEchoedWhole() throws {
        let coturn = try CoturnServer(credentials: Self.credentials, realm: "turnload.test", relayPorts: PortBlock(count: 10))
        let peer = try EchoPeerFixture()
        let r = try run(coturn.address, .tcp) {
            $0.turnPeer = peer.address
            $0.turnSendIndications = true
        }
        assertEchoedWhole(r, .tcp)
        XCTAssertTrue(r.turnSendIndications)
    }

    /// Over TLS with the certificate checked against the test CA, and refreshes (allocation,
    /// permission, channel) written on the same connections as the data while it flows.
    func testTLSChannelDataEchoedWholeWithRefreshes() throws {
        let (certificates, coturn) = try coturnOverTLS()
        let peer = try EchoPeerFixture()
        let r = try run(try XCTUnwrap(coturn.tlsAddress), .tls) {
            $0.turnPeer = peer.address
            $0.tlsCA = certificates.caCertificate
            $0.seconds = 1.6
            $0.turnRefresh = 0.5
        }
        assertEchoedWhole(r, .tls)
        XCTAssertGreaterThanOrEqual(r.turnRefreshes, 1, "a refresh round ran during the run")
        XCTAssertEqual(r.turnFailedRefreshes, 0)
    }

    /// coturn listening for TLS too, with a certificate of the test CA.
    private func coturnOverTLS(relayPorts: Int = 10) throws -> (CertificateFixture, CoturnServer) {
        let certificates = try CertificateFixture()
        let coturn = try CoturnServer(credentials: Self.credentials, realm: "turnload.test",
                                      relayPorts: PortBlock(count: relayPorts), tls: certificates)
        return (certificates, coturn)
    }

    /// Without --tls-ca the certificate is not checked, as coturn's uclient does not.
    func testTLSSendIndicationsEchoedWhole() throws {
        let (_, coturn) = try coturnOverTLS()
        let peer = try EchoPeerFixture()
        let r = try run(try XCTUnwrap(coturn.tlsAddress), .tls) {
            $0.turnPeer = peer.address
            $0.turnSendIndications = true
        }
        assertEchoedWhole(r, .tls)
    }

    /// The generator's own peer socket both ways: clients on TCP, the peer on UDP; the peer's
    /// datagrams come back to the clients as ChannelData on their connections.
    func testTCPWithTheGeneratorsOwnPeerBothWays() throws {
        let coturn = try CoturnServer(credentials: Self.credentials, realm: "turnload.test", relayPorts: PortBlock(count: 10))
        let r = try run(coturn.address, .tcp) { $0.bidirectional = true }
        XCTAssertEqual(r.latchedStreams, 4)
        XCTAssertGreaterThan(r.sent, 0)
        XCTAssertEqual(r.received, r.sent)
        XCTAssertEqual(r.foreign, 0)
        XCTAssertEqual(r.turnFailedClients, 0)
        XCTAssertGreaterThan(r.receivedWithoutMarks, 0, "the reverse direction arrived on the streams")
        XCTAssertLessThan(r.receivedWithoutMarks, r.received, "the forward direction arrived at the UDP peer socket")
    }

    func testRefusedConnectionsNameHowManyAndWhy() throws {
        // A port free for TCP that nobody listens on.
        let port = try FreePort.udpAndTCP()
        XCTAssertThrowsError(try run("127.0.0.1:\(port)", .tcp) { $0.streams = 3 }) { error in
            let message = (error as? LoadError)?.message ?? "\(error)"
            XCTAssertTrue(message.hasPrefix("3 of 3 TURN clients could not connect; the first: TURN over TCP to 127.0.0.1:\(port): connect:"), message)
            XCTAssertTrue(message.contains("ECONNREFUSED"), message)
        }
    }

    func testACertificateFromAnotherCAIsRefused() throws {
        let (certificates, coturn) = try coturnOverTLS(relayPorts: 4)
        XCTAssertThrowsError(try run(try XCTUnwrap(coturn.tlsAddress), .tls) { $0.tlsCA = certificates.otherCACertificate }) { error in
            let message = (error as? LoadError)?.message ?? "\(error)"
            XCTAssertTrue(message.contains("TLS handshake: certificate not accepted"), message)
        }
    }

    /// The server going away mid-run: every client counts as failed, with the reason, and the
    /// run ends on time with what it measured.
    func testAServerThatGoesAwayFailsItsClients() throws {
        let coturn = try CoturnServer(credentials: Self.credentials, realm: "turnload.test", relayPorts: PortBlock(count: 10))
        let peer = try EchoPeerFixture()
        let pid = coturn.pid
        let stopper = Thread {
            Thread.sleep(forTimeInterval: 1.0)
            kill(pid, SIGTERM)
        }
        stopper.start()
        let r = try run(coturn.address, .tcp) {
            $0.turnPeer = peer.address
            $0.seconds = 2.5
            $0.drain = 0.3
        }
        XCTAssertEqual(r.turnFailedClients, 4, r.turnFailure ?? "no failure")
        let reason = r.turnFailure ?? ""
        XCTAssertTrue(reason.contains("closed by the server") || reason.contains("ECONNRESET"), reason)
        XCTAssertGreaterThan(r.received, 0, "data flowed before")
    }
}
