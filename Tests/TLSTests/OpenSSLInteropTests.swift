import Foundation
import TestSupport
import TLS
import XCTest

/// Our sessions against an implementation that is not ours: `openssl s_client` connecting to a
/// server session over real loopback TCP, and a client session connecting to `openssl
/// s_server`. Every wait is bounded; the children are stopped in tearDown.
final class OpenSSLInteropTests: XCTestCase {
    private var certificates: CertificateFixture!
    private var children: [ChildProcess] = []

    override func setUpWithError() throws {
        certificates = try CertificateFixture()
    }

    override func tearDown() {
        for child in children { child.stop() }
        children = []
        certificates = nil
    }

    // MARK: openssl s_client against our server

    func testSClientHandshakesEchoesAndSeesTheServersSerial() throws {
        let context = try TLSServerContext(certificateFile: certificates.server.certificate, keyFile: certificates.server.key)
        let server = TLSEchoServerHarness(context: context)
        let client = try sClient(port: server.port, ["-alpn", "stun.turn"])
        let payload = "ping through mediarelay TLS \(UInt32.random(in: 0...UInt32.max))"
        XCTAssertTrue(client.waitForText("Verify return code: 0 (ok)", seconds: 20), client.text)
        client.write(payload + "\n")
        XCTAssertTrue(client.waitForText("\n" + payload, seconds: 20), "echo not seen: \(client.text)")
        client.closeInput()
        XCTAssertEqual(client.wait(seconds: 20), 0, client.text)

        XCTAssertTrue(client.text.contains("ALPN protocol: stun.turn"), client.text)
        XCTAssertTrue(client.text.contains("New, TLSv1.3,"), client.text)
        XCTAssertEqual(try serialOfFirstCertificate(in: client.text), certificates.server.serial)
        let outcome = try XCTUnwrap(server.outcome(seconds: 20))
        XCTAssertEqual(outcome.handshake, .done, outcome.failureDetail ?? "")
        XCTAssertEqual(outcome.negotiatedALPN, "stun.turn")
        XCTAssertEqual(outcome.protocolVersion, "TLSv1.3")
        XCTAssertEqual(outcome.echoedBytes, payload.utf8.count + 1)
        XCTAssertEqual(outcome.readEnd, .closed, "s_client ends with close_notify")
    }

    func testSClientAtTLS12WithoutALPN() throws {
        let context = try TLSServerContext(certificateFile: certificates.server.certificate, keyFile: certificates.server.key)
        let server = TLSEchoServerHarness(context: context)
        let client = try sClient(port: server.port, ["-tls1_2"])
        XCTAssertTrue(client.waitForText("Verify return code: 0 (ok)", seconds: 20), client.text)
        client.write("twelve\n")
        XCTAssertTrue(client.waitForText("\ntwelve", seconds: 20), client.text)
        client.closeInput()
        XCTAssertEqual(client.wait(seconds: 20), 0, client.text)
        XCTAssertTrue(client.text.contains("New, TLSv1.2,"), client.text)
        XCTAssertTrue(client.text.contains("No ALPN negotiated"), client.text)
        let outcome = try XCTUnwrap(server.outcome(seconds: 20))
        XCTAssertEqual(outcome.protocolVersion, "TLSv1.2")
        XCTAssertNil(outcome.negotiatedALPN)
        XCTAssertEqual(outcome.echoedBytes, 7)
    }

    func testSClientVerifiesTheChainFromTheRootAlone() throws {
        let context = try TLSServerContext(certificateFile: certificates.chainedServer.certificate, keyFile: certificates.chainedServer.key)
        let server = TLSEchoServerHarness(context: context)
        let client = try sClient(port: server.port, [])
        XCTAssertTrue(client.waitForText("Verify return code: 0 (ok)", seconds: 20), client.text)
        client.closeInput()
        _ = client.wait(seconds: 20)
        XCTAssertEqual(try serialOfFirstCertificate(in: client.text), certificates.chainedServer.serial)
        XCTAssertTrue(client.text.contains(" 1 s:CN = mediarelay test intermediate"), "the intermediate was sent: \(client.text)")
    }

    func testSClientOfferingOnlyTLS11IsRefused() throws {
        let context = try TLSServerContext(certificateFile: certificates.server.certificate, keyFile: certificates.server.key)
        let server = TLSEchoServerHarness(context: context)
        // SECLEVEL=0 lets openssl's own client offer TLS 1.1 at all; our server must still refuse it.
        let client = try sClient(port: server.port, ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"])
        let outcome = try XCTUnwrap(server.outcome(seconds: 20))
        XCTAssertEqual(outcome.handshake, .failed(.protocolError), outcome.failureDetail ?? "")
        XCTAssertTrue(outcome.failureDetail?.contains("unsupported protocol") == true, outcome.failureDetail ?? "")
        XCTAssertNotEqual(client.wait(seconds: 20), 0, client.text)
    }

    // MARK: our client against openssl s_server

    func testClientAgainstSServer() throws {
        let (server, port) = try sServer(certificates.server, ["-alpn", "stun.turn"])
        let context = try TLSClientContext(trusting: certificates.caCertificate, alpn: ["stun.turn"])
        let connection = try connect(port: port, context: context)
        XCTAssertEqual(connection.handshake(seconds: 20), .done, connection.session.failureDetail ?? "")
        XCTAssertEqual(connection.session.protocolVersion, "TLSv1.3")
        XCTAssertEqual(connection.session.negotiatedALPN, "stun.turn")
        XCTAssertEqual(connection.session.peerCertificateSerial, certificates.server.serial)
        // s_server -rev answers each line reversed.
        XCTAssertTrue(connection.write(Array("hello mediarelay\n".utf8)))
        let answered = connection.read(seconds: 20) { String(decoding: $0, as: UTF8.self).contains("yaleraidem olleh") }
        XCTAssertTrue(answered, "got \(String(decoding: connection.plaintext, as: UTF8.self)); s_server said \(server.text)")
        connection.session.shutdown()
        XCTAssertTrue(connection.flush())
        XCTAssertTrue(server.waitForText("ALPN protocols selected: stun.turn", seconds: 5), server.text)
    }

    func testClientAtTLS12AgainstSServer() throws {
        let (_, port) = try sServer(certificates.secondServer, [])
        let context = try TLSClientContext(trusting: certificates.caCertificate, maximumVersion: .tls12)
        let connection = try connect(port: port, context: context)
        XCTAssertEqual(connection.handshake(seconds: 20), .done, connection.session.failureDetail ?? "")
        XCTAssertEqual(connection.session.protocolVersion, "TLSv1.2")
        XCTAssertNil(connection.session.negotiatedALPN)
        XCTAssertEqual(connection.session.peerCertificateSerial, certificates.secondServer.serial)
        XCTAssertTrue(connection.write(Array("abc\n".utf8)))
        XCTAssertTrue(connection.read(seconds: 20) { String(decoding: $0, as: UTF8.self).contains("cba") })
    }

    func testClientRefusesSServerItDoesNotTrust() throws {
        let (server, port) = try sServer(certificates.server, [])
        let context = try TLSClientContext(trusting: certificates.otherCACertificate)
        let connection = try connect(port: port, context: context)
        XCTAssertEqual(connection.handshake(seconds: 20), .failed(.protocolError))
        XCTAssertTrue(connection.session.failureDetail?.contains("certificate verify failed") == true, connection.session.failureDetail ?? "")
        XCTAssertTrue(server.waitForText("alert unknown ca", seconds: 10), "s_server got our alert: \(server.text)")
    }

    // MARK: Helpers

    private func sClient(port: UInt16, _ extra: [String]) throws -> ChildProcess {
        let child = try ChildProcess(CertificateFixture.openssl, [
            "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", certificates.caCertificate, "-verify_return_error",
            "-servername", "localhost", "-verify_hostname", "localhost", "-showcerts",
        ] + extra, input: true)
        children.append(child)
        return child
    }

    /// `openssl s_server -rev` for one connection with `server`'s certificate, and its port.
    private func sServer(_ server: CertificateFixture.Server, _ extra: [String]) throws -> (ChildProcess, UInt16) {
        let child = try ChildProcess(CertificateFixture.openssl, [
            "s_server", "-accept", "127.0.0.1:0", "-cert", server.certificate, "-key", server.key, "-rev", "-naccept", "1",
        ] + extra)
        children.append(child)
        guard child.waitForText("ACCEPT 127.0.0.1:", seconds: 20),
              let line = child.text.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT 127.0.0.1:") }),
              let port = UInt16(line.dropFirst("ACCEPT 127.0.0.1:".count)) else {
            throw XCTSkip("s_server did not say its port: \(child.text)")
        }
        return (child, port)
    }

    private func connect(port: UInt16, context: TLSClientContext) throws -> SocketSessionHarness {
        let fd = try LoopbackTCP.connect(port: port)
        return SocketSessionHarness(session: try TLSSession(client: context, serverName: "localhost"), fd: fd)
    }

    /// The serial number, as `openssl x509 -serial` reads it, of the first PEM certificate in
    /// `text` (s_client -showcerts prints the chain it was sent, leaf first).
    private func serialOfFirstCertificate(in text: String) throws -> String? {
        guard let start = text.range(of: "-----BEGIN CERTIFICATE-----"),
              let end = text.range(of: "-----END CERTIFICATE-----", range: start.upperBound..<text.endIndex) else { return nil }
        let path = "\(certificates.directory)/seen-by-s_client.pem"
        try String(text[start.lowerBound..<end.upperBound]).appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
        let (status, output) = try ChildProcess.run(CertificateFixture.openssl, ["x509", "-noout", "-serial", "-in", path])
        guard status == 0, let line = output.split(separator: "\n").first(where: { $0.hasPrefix("serial=") }) else { return nil }
        return String(line.dropFirst("serial=".count))
    }
}
