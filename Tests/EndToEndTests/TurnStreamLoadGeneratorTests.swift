import DatagramEngine
import Foundation
import NetAddress
import TestPorts
import TestSupport
import XCTest

/// mediarelay-load's TURN clients over TCP and over TLS (its own stream and TLS code, not the
/// relay's) against the real server: every datagram both ways, refreshes on the data's
/// connection, every allocation released when the connections close, and the relay's figures
/// by transport. What a stream client sends leaves for its peer Not-ECT with the DSCP the
/// policy gives a zero class (RFC 8656 section 15); the load generator's peer reads that.
final class TurnStreamLoadGeneratorTests: XCTestCase {
    func testLoadGeneratorOverTCPAndTLSThroughTheRealServer() throws {
        let certificates = try CertificateFixture()
        let port = try FreePort.udp()
        let tcp = try TCPListener(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint.port
        let tls = try TCPListener(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint.port
        let relay = try RelayProcess(ports: PortBlock(count: 50), [
            "--turn", "127.0.0.1:\(port)", "--turn-tcp", "127.0.0.1:\(tcp)", "--turn-tls", "127.0.0.1:\(tls)",
            "--tls-cert", certificates.server.certificate, "--tls-key", certificates.server.key,
            "--turn-realm", "load.test", "--turn-user", "load:pw", "--turn-allowed-peer", "127.0.0.1/32",
        ])
        defer { XCTAssertEqual(relay.stop(), 0) }
        for (transport, listener, extra) in [("tcp", tcp, [String]()), ("tls", tls, ["--tls-ca", certificates.caCertificate])] {
            let object = try LoadGeneratorTests.runLoad([
                "--turn", "127.0.0.1:\(listener)", "--turn-transport", transport, "--turn-user", "load:pw", "--streams", "4",
                "--rate", "400", "--tos", "\(46 << 2 | 1)", "--seconds", "1", "--warmup", "0.2", "--bidirectional",
                "--turn-refresh", "0.5", "--drain", "5",
            ] + extra)
            let sent = try XCTUnwrap(object["sent"] as? Int)
            XCTAssertGreaterThan(sent, 0, transport)
            XCTAssertEqual(object["received"] as? Int, sent, "\(transport): every datagram, both ways")
            XCTAssertEqual(object["turn_failed_refreshes"] as? Int, 0, transport)
            // The peer's half came through the relay's UDP side: all with TOS 0, whatever the
            // client asked its own socket for (--tos EF with ECT(1)); the client's half came in
            // the stream, which carries no marks.
            let unmarked = try XCTUnwrap(object["received_without_marks"] as? Int)
            XCTAssertEqual(object["tos_seen"] as? [String: Int], ["0": sent - unmarked], transport)
            XCTAssertGreaterThan(unmarked, 0, transport)
        }
        var transports: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(10)
        repeat {
            let turn = try XCTUnwrap(relay.stats()["turn"] as? [String: Any])
            transports = try XCTUnwrap(turn["transports"] as? [String: Any])
            if turn["allocations"] as? Int == 0 { break }
            usleep(50_000)
        } while Date() < deadline
        for name in ["tcp", "tls"] {
            let entry = try XCTUnwrap(transports[name] as? [String: Any], name)
            XCTAssertEqual(entry["allocations_created"] as? Int, 4, name)
            XCTAssertEqual(entry["connections"] as? Int, 0, "\(name): closed at the end")
            XCTAssertGreaterThan(entry["datagrams_to_peers"] as? Int ?? 0, 0, name)
            XCTAssertGreaterThan(entry["datagrams_to_clients"] as? Int ?? 0, 0, name)
        }
        let handshakes = try XCTUnwrap((transports["tls"] as? [String: Any])?["handshakes"] as? [String: Any])
        XCTAssertEqual(handshakes["completed"] as? Int, 4)
    }
}
