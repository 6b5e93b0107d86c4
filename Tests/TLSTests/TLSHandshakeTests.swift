import TestSupport
import TLS
import XCTest

/// Server and client sessions pumped against each other in memory: versions, ALPN, the
/// client's checks of the server, and what a server does with bytes that are not TLS.
final class TLSHandshakeTests: XCTestCase {
    private var certificates: CertificateFixture!
    private var server: TLSServerContext!

    override func setUpWithError() throws {
        certificates = try CertificateFixture()
        server = try TLSServerContext(certificateFile: certificates.server.certificate, keyFile: certificates.server.key)
    }

    override func tearDown() {
        server = nil
        certificates = nil
    }

    func testTLS13ByDefault() throws {
        let pair = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.caCertificate))
        let steps = pair.handshake()
        XCTAssertEqual(steps.server, .done, pair.server.failureDetail ?? "")
        XCTAssertEqual(steps.client, .done, pair.client.failureDetail ?? "")
        XCTAssertTrue(pair.server.isEstablished && pair.client.isEstablished)
        XCTAssertEqual(pair.server.protocolVersion, "TLSv1.3")
        XCTAssertEqual(pair.client.protocolVersion, "TLSv1.3")
        XCTAssertEqual(pair.client.peerCertificateSerial, certificates.server.serial)
        XCTAssertNil(pair.server.peerCertificateSerial, "clients present no certificate")
        XCTAssertNotNil(pair.client.cipherSuite)
    }

    func testTLS12WhenTheClientStopsThere() throws {
        let client = try TLSClientContext(trusting: certificates.caCertificate, alpn: ["stun.turn"], maximumVersion: .tls12)
        let pair = try SessionPairHarness(server: server, client: client)
        let steps = pair.handshake()
        XCTAssertEqual(steps.server, .done, pair.server.failureDetail ?? "")
        XCTAssertEqual(steps.client, .done, pair.client.failureDetail ?? "")
        XCTAssertEqual(pair.server.protocolVersion, "TLSv1.2")
        XCTAssertEqual(pair.client.protocolVersion, "TLSv1.2")
        XCTAssertEqual(pair.server.negotiatedALPN, "stun.turn")
        let echo = pair.transfer(Array("over TLS 1.2".utf8), from: pair.client, to: pair.server)
        XCTAssertEqual(echo.received, Array("over TLS 1.2".utf8))
    }

    func testALPNStunTurnWhenOffered() throws {
        for offer in [["stun.turn"], ["h2", "stun.turn"]] {
            let pair = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.caCertificate, alpn: offer))
            XCTAssertEqual(pair.handshake().server, .done)
            XCTAssertEqual(pair.server.negotiatedALPN, "stun.turn", "offered \(offer)")
            XCTAssertEqual(pair.client.negotiatedALPN, "stun.turn", "offered \(offer)")
        }
    }

    func testNoALPNWhenNotOfferedOrOnlyOthersOffered() throws {
        for offer in [[], ["h2", "http/1.1"]] {
            let pair = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.caCertificate, alpn: offer))
            let steps = pair.handshake()
            XCTAssertEqual(steps.server, .done, "offered \(offer): \(pair.server.failureDetail ?? "")")
            XCTAssertEqual(steps.client, .done, "offered \(offer): \(pair.client.failureDetail ?? "")")
            XCTAssertNil(pair.server.negotiatedALPN, "offered \(offer)")
            XCTAssertNil(pair.client.negotiatedALPN, "offered \(offer)")
        }
    }

    func testClientWithoutCAFileTrustsAnyServer() throws {
        let pair = try SessionPairHarness(server: server, client: TLSClientContext(trusting: nil), serverName: "not-the-name.example")
        let steps = pair.handshake()
        XCTAssertEqual(steps.client, .done, pair.client.failureDetail ?? "")
        XCTAssertEqual(steps.server, .done, pair.server.failureDetail ?? "")
    }

    func testChainIsSentSoARootAloneVerifiesIt() throws {
        let chained = try TLSServerContext(certificateFile: certificates.chainedServer.certificate, keyFile: certificates.chainedServer.key)
        let pair = try SessionPairHarness(server: chained, client: TLSClientContext(trusting: certificates.caCertificate))
        XCTAssertEqual(pair.handshake().client, .done, pair.client.failureDetail ?? "")
        XCTAssertEqual(pair.client.peerCertificateSerial, certificates.chainedServer.serial)
    }

    func testIPAddressIsCheckedAgainstTheCertificate() throws {
        let pair = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.caCertificate), serverName: "127.0.0.1")
        XCTAssertEqual(pair.handshake().client, .done, pair.client.failureDetail ?? "")
        let other = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.caCertificate), serverName: "127.0.0.2")
        XCTAssertEqual(other.handshake().client, .failed(.protocolError))
    }

    func testClientTrustingAnotherCAFailsAndTheServerHearsWhy() throws {
        let pair = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.otherCACertificate))
        let steps = pair.handshake()
        XCTAssertEqual(steps.client, .failed(.protocolError))
        XCTAssertEqual(steps.server, .failed(.protocolError), "the client's alert reaches the server")
        XCTAssertTrue(pair.client.failureDetail?.contains("certificate verify failed") == true, pair.client.failureDetail ?? "")
        XCTAssertTrue(pair.server.failureDetail?.contains("alert") == true, pair.server.failureDetail ?? "")
        XCTAssertFalse(pair.client.isEstablished)
        XCTAssertFalse(pair.client.writePlaintext(UnsafeRawBufferPointer(start: nil, count: 0)), "a failed session writes nothing")
    }

    func testWrongHostNameFails() throws {
        let pair = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.caCertificate), serverName: "example.com")
        XCTAssertEqual(pair.handshake().client, .failed(.protocolError))
        XCTAssertTrue(pair.client.failureDetail?.contains("hostname mismatch") == true, pair.client.failureDetail ?? "")
    }

    func testExpiredServerCertificateFailsVerification() throws {
        let expired = try TLSServerContext(certificateFile: certificates.expiredServer.certificate, keyFile: certificates.expiredServer.key)
        let pair = try SessionPairHarness(server: expired, client: TLSClientContext(trusting: certificates.caCertificate))
        XCTAssertEqual(pair.handshake().client, .failed(.protocolError))
        XCTAssertTrue(pair.client.failureDetail?.contains("expired") == true, pair.client.failureDetail ?? "")
    }

    func testPlaintextSTUNIsNotTLS() throws {
        // A STUN Binding request (RFC 8489): type 0x0001, length 0, magic cookie, transaction id.
        let binding: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + Array(repeating: 0x5A, count: 12)
        let channelData: [UInt8] = [0x40, 0x00, 0x00, 0x04, 1, 2, 3, 4]
        let http = Array("GET / HTTP/1.1\r\n\r\n".utf8)
        let sslv2Hello: [UInt8] = [0x80, 0x2E, 0x01, 0x00, 0x02]
        let wrongVersion: [UInt8] = [0x16, 0x03, 0x09, 0x00, 0x10]
        for bytes in [binding, channelData, http, sslv2Hello, wrongVersion] {
            let session = try TLSSession(server: server)
            XCTAssertEqual(bytes.withUnsafeBytes { session.receiveCiphertext($0) }, bytes.count, "takes and drops everything")
            XCTAssertEqual(session.handshake(), .failed(.notTLS), "\(bytes)")
            XCTAssertEqual(session.pendingCiphertext, 0, "no alert for something that is not TLS")
            XCTAssertTrue(session.failureDetail?.contains("not a TLS handshake record") == true, session.failureDetail ?? "")
            var buffer = [UInt8](repeating: 0, count: 64)
            XCTAssertEqual(buffer.withUnsafeMutableBytes { session.readPlaintext(into: $0) }, .failed(.notTLS))
        }
    }

    func testPrefixJudgedOneByteAtATime() throws {
        let session = try TLSSession(server: server)
        for byte: UInt8 in [0x16, 0x03] {
            XCTAssertEqual([byte].withUnsafeBytes { session.receiveCiphertext($0) }, 1)
            XCTAssertEqual(session.handshake(), .inProgress)
        }
        XCTAssertEqual([UInt8(0x07)].withUnsafeBytes { session.receiveCiphertext($0) }, 1)
        XCTAssertEqual(session.handshake(), .failed(.notTLS))
    }

    func testGarbageAfterAValidRecordHeaderIsAProtocolError() throws {
        let session = try TLSSession(server: server)
        let bytes: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x08] + Array(repeating: 0xEE, count: 8)
        XCTAssertEqual(bytes.withUnsafeBytes { session.receiveCiphertext($0) }, bytes.count)
        XCTAssertEqual(session.handshake(), .failed(.protocolError))
        XCTAssertGreaterThan(session.pendingCiphertext, 0, "an alert for the client")
    }

    func testCloseNotifyDuringTheHandshakeIsPeerClosed() throws {
        let pair = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.caCertificate))
        XCTAssertEqual(pair.client.handshake(), .inProgress)
        pair.pump()
        XCTAssertEqual(pair.server.handshake(), .inProgress)
        // A close_notify alert as a TLS 1.2 record in the clear: level warning (1), close_notify (0).
        let closeNotify: [UInt8] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x01, 0x00]
        XCTAssertEqual(closeNotify.withUnsafeBytes { pair.server.receiveCiphertext($0) }, closeNotify.count)
        XCTAssertEqual(pair.server.handshake(), .failed(.peerClosed), pair.server.failureDetail ?? "")
    }

    func testFailureDoesNotLeakIntoTheNextSessionOnThisThread() throws {
        let failing = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.otherCACertificate))
        XCTAssertEqual(failing.handshake().client, .failed(.protocolError))
        let next = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.caCertificate))
        let steps = next.handshake()
        XCTAssertEqual(steps.client, .done, next.client.failureDetail ?? "")
        XCTAssertEqual(steps.server, .done, next.server.failureDetail ?? "")
    }
}
