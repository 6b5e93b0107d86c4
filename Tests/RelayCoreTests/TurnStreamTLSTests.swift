import DatagramEngine
import Foundation
import Glibc
@testable import RelayCore
import NetAddress
import STUN
import TestSupport
import TLS
import XCTest

/// TURN over TLS on every backend: the same stream of messages, however its records and
/// segments are cut, relays the same datagrams; peers' datagrams come back framed inside TLS;
/// plaintext on the TLS port, a refused handshake and a handshake that never ends each close
/// their own connection and are counted; ALPN stun.turn is taken when offered.
final class TurnStreamTLSTests: XCTestCase {
    private let payloads: [[UInt8]] = (1...8).map { length in (0..<length).map { UInt8($0 &+ length) } } + [[UInt8](repeating: 7, count: 1200)]

    func testTheSameStreamRelaysTheSameDatagramsOverTLS() throws {
        let certificates = try CertificateFixture()
        let trust = try TLSClientContext(trusting: certificates.caCertificate, alpn: ["stun.turn"])
        for backend in [Backend.perPacket, .mmsg, .uring] {
            let relay = try TurnStreamRelay(backend: backend, certificate: (certificates.server.certificate, certificates.server.key))
            let tls = try XCTUnwrap(relay.tls)
            let peer = try PlainUDPPeer()
            var stream: [UInt8] = []
            for payload in payloads { stream += paddedChannelData(0x4000, payload) }
            stream += sendIndication(peer.address, [9, 9, 9])
            for segments in [StreamTurnClient.Segments.whole, .bytewise] {
                let client = try StreamTurnClient(to: tls, tls: trust)
                let relayed = try client.allocate(channel: 0x4000, to: peer.address)
                client.write(stream, segments: segments)
                XCTAssertEqual(peer.receiveAll(), payloads + [[9, 9, 9]], "\(backend), \(segments)")
                peer.send([5, 6, 7], to: relayed)
                XCTAssertEqual(client.readMessage(), [0x40, 0x00, 0x00, 0x03, 5, 6, 7], "\(backend): back inside TLS")
            }
            XCTAssertTrue(relay.wait { $0.transports.handshakesCompleted == 2 && $0.transports.datagramsToPeers[TurnTransport.tls.rawValue] == 20 },
                          "\(backend): \(relay.stats.transports)")
        }
    }

    /// Each record is decrypted into the connection's plaintext buffer, which the next record
    /// reuses before the flush sends what the last one relayed: every payload must still leave
    /// as it came, with a record per message sent back to back (many records in one turn) and
    /// with every message in one record.
    func testEveryPayloadLeavesIntactWhenManyRecordsArriveInOneTurn() throws {
        let certificates = try CertificateFixture()
        let context = try TLSClientContext(trusting: certificates.caCertificate)
        for backend in [Backend.perPacket, .mmsg, .uring] {
            let relay = try TurnStreamRelay(backend: backend, certificate: (certificates.server.certificate, certificates.server.key))
            let peer = try PlainUDPPeer()
            let client = try StreamTurnClient(to: try XCTUnwrap(relay.tls), tls: context)
            _ = try client.allocate(channel: 0x4000, to: peer.address)
            for payload in payloads { client.write(paddedChannelData(0x4000, payload)) }
            XCTAssertEqual(peer.receiveAll(), payloads, "\(backend), a record per message")
            client.write(payloads.flatMap { paddedChannelData(0x4000, $0) })
            XCTAssertEqual(peer.receiveAll(), payloads, "\(backend), every message in one record")
        }
    }

    func testALPNStunTurnIsTakenWhenOffered() throws {
        let certificates = try CertificateFixture()
        let relay = try TurnStreamRelay(certificate: (certificates.server.certificate, certificates.server.key))
        let offering = try TLSClientContext(trusting: certificates.caCertificate, alpn: ["stun.turn"])
        let silent = try TLSClientContext(trusting: certificates.caCertificate)
        let other = try TLSClientContext(trusting: certificates.caCertificate, alpn: ["h2"])
        XCTAssertEqual(try StreamTurnClient(to: XCTUnwrap(relay.tls), tls: offering).negotiatedALPN, "stun.turn")
        XCTAssertNil(try StreamTurnClient(to: XCTUnwrap(relay.tls), tls: silent).negotiatedALPN)
        // A client offering only another protocol still gets TURN, without ALPN.
        let client = try StreamTurnClient(to: XCTUnwrap(relay.tls), tls: other)
        XCTAssertNil(client.negotiatedALPN)
        client.write(MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes)
        XCTAssertNotNil(client.readMessage())
    }

    func testHandshakesPastATurnsBudgetWaitForTheNextTurnAndAllComplete() throws {
        let certificates = try CertificateFixture()
        let relay = try TurnStreamRelay(certificate: (certificates.server.certificate, certificates.server.key)) {
            $0.streamLimits.handshakesPerTurn = 1
        }
        let tls = try XCTUnwrap(relay.tls)
        let trust = try TLSClientContext(trusting: certificates.caCertificate)
        // Twenty ClientHellos reach the worker together; it may take one handshake step a turn.
        let clients = try (0..<20).map { _ in try StreamTurnClient(to: tls, tls: trust, handshake: false) }
        for client in clients { client.sendClientHello() }
        for (index, client) in clients.enumerated() {
            XCTAssertNoThrow(try client.finishHandshake(), "client \(index)")
            client.write(MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes)
            XCTAssertNotNil(client.readMessage(), "client \(index) answered")
        }
        XCTAssertTrue(relay.wait { $0.transports.handshakesCompleted == 20 })
    }

    func testWhatIsNotATLSClientClosesOnlyItsConnection() throws {
        let certificates = try CertificateFixture()
        let relay = try TurnStreamRelay(certificate: (certificates.server.certificate, certificates.server.key)) {
            $0.streamLimits.handshakeNanoseconds = 400_000_000
        }
        let tls = try XCTUnwrap(relay.tls)
        let peer = try PlainUDPPeer()
        let bystander = try StreamTurnClient(to: tls, tls: TLSClientContext(trusting: certificates.caCertificate))
        _ = try bystander.allocate(channel: 0x4000, to: peer.address)

        // Plaintext STUN on the TLS port.
        let plaintext = try StreamTurnClient(to: tls)
        plaintext.write(MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes)
        XCTAssertTrue(plaintext.closedByRelay())
        XCTAssertTrue(relay.wait { $0.transports[closed: .tls, reason: .notTLS] == 1 && $0.transports.handshakesFailed[HandshakeFailure.notTLS.rawValue] == 1 })
        // A client that only speaks TLS 1.1: refused by the library's defaults.
        let old = try StreamTurnClient(to: tls)
        old.write([0x16, 0x03, 0x02, 0x00, 0x31, 0x01, 0x00, 0x00, 0x2D, 0x03, 0x02] + [UInt8](repeating: 0x11, count: 32)
            + [0x00, 0x00, 0x02, 0x00, 0x2F, 0x01, 0x00, 0x00, 0x02, 0xFF, 0x01])
        XCTAssertTrue(old.closedByRelay())
        XCTAssertTrue(relay.wait { $0.transports[closed: .tls, reason: .tlsError] == 1 })
        // A ClientHello claiming 64 KiB: closed on its headers, before the library holds any of it.
        let large = try StreamTurnClient(to: tls)
        large.write([0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x01, 0x00, 0x00] + [UInt8](repeating: 0x11, count: 1_000))
        XCTAssertTrue(large.closedByRelay())
        XCTAssertTrue(relay.wait { $0.transports[closed: .tls, reason: .tlsError] == 2
            && $0.transports.handshakesFailed[HandshakeFailure.protocolError.rawValue] == 2 })
        // A handshake that never ends.
        let silent = try StreamTurnClient(to: tls)
        XCTAssertTrue(silent.closedByRelay(seconds: 3))
        XCTAssertTrue(relay.wait { $0.transports[closed: .tls, reason: .handshakeTimeout] == 1
            && $0.transports.handshakesFailed[HandshakeFailure.timeout.rawValue] == 1 })

        bystander.write(paddedChannelData(0x4000, [42]))
        XCTAssertEqual(peer.receiveAll(), [[42]], "the established client is untouched")
    }
}
