import TestSupport
import TLS
import XCTest

/// Application data through established sessions in memory: sizes around the record limit,
/// the whole-or-nothing write, close_notify.
final class TLSDataTests: XCTestCase {
    private var certificates: CertificateFixture!
    private var pair: SessionPairHarness!

    override func setUpWithError() throws {
        certificates = try CertificateFixture()
        let server = try TLSServerContext(certificateFile: certificates.server.certificate, keyFile: certificates.server.key)
        pair = try SessionPairHarness(server: server, client: TLSClientContext(trusting: certificates.caCertificate, alpn: ["stun.turn"]))
        let steps = pair.handshake()
        XCTAssertEqual(steps.server, .done)
        XCTAssertEqual(steps.client, .done)
    }

    override func tearDown() {
        pair = nil
        certificates = nil
    }

    func testDataBothWaysInManySizes() {
        let sizes = [1, 2, 20, 100, 548, 1_200, 1_500, 4_096, 16_383, 16_384, 16_385, 20_000]
        for size in sizes {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) }
            XCTAssertEqual(pair.transfer(bytes, from: pair.client, to: pair.server).received, bytes, "client to server, \(size) bytes")
            XCTAssertEqual(pair.transfer(bytes, from: pair.server, to: pair.client).received, bytes, "server to client, \(size) bytes")
        }
    }

    func testManyMessagesInOrder() {
        var sent: [UInt8] = []
        for index in 0..<200 {
            let message = (0..<(index % 37 + 1) * 40).map { UInt8(truncatingIfNeeded: $0 + index) }
            XCTAssertTrue(message.withUnsafeBytes { pair.client.writePlaintext($0) }, "message \(index)")
            sent += message
            if index % 7 == 0 { pair.pump() }
        }
        var received: [UInt8] = []
        for _ in 0..<100 where received.count < sent.count {
            pair.pump()
            received += pair.readAll(pair.server).bytes
        }
        XCTAssertEqual(received, sent)
    }

    func testWriteIsWholeOrNothingWhenTheBufferIsFull() {
        let message = [UInt8](repeating: 0xAB, count: 1_500)
        var accepted = 0
        var refusedAt: Int?
        for _ in 0..<100 {
            let before = pair.client.pendingCiphertext
            if message.withUnsafeBytes({ pair.client.writePlaintext($0) }) {
                accepted += 1
            } else {
                refusedAt = before
                XCTAssertEqual(pair.client.pendingCiphertext, before, "a refused write adds nothing")
                break
            }
        }
        guard let refusedAt else { return XCTFail("100 writes of 1500 bytes fit a 20 KiB buffer") }
        XCTAssertGreaterThan(accepted, 10)
        XCTAssertGreaterThan(refusedAt + TLSRecord.ciphertextBound(plaintextBytes: message.count), 20 << 10,
                             "refused only when the bound did not fit")
        // Room again once the ciphertext is taken; everything accepted arrives, nothing refused does.
        pair.pump()
        XCTAssertTrue(message.withUnsafeBytes { pair.client.writePlaintext($0) })
        accepted += 1
        var received: [UInt8] = []
        for _ in 0..<20 {
            pair.pump()
            received += pair.readAll(pair.server).bytes
        }
        XCTAssertEqual(received.count, accepted * message.count)
    }

    func testWriteLargerThanTheBufferCanHoldIsRefused() {
        let tooLarge = [UInt8](repeating: 1, count: 20 << 10)
        XCTAssertFalse(tooLarge.withUnsafeBytes { pair.client.writePlaintext($0) })
        XCTAssertEqual(pair.client.pendingCiphertext, 0)
        XCTAssertTrue(pair.client.isEstablished, "a refusal is not a failure")
    }

    func testRecordOverheadStaysWithinTheBound() {
        for size in [1, 100, 1_500, 16_384, 16_385] {
            let bytes = [UInt8](repeating: 7, count: size)
            let before = pair.server.pendingCiphertext
            XCTAssertTrue(bytes.withUnsafeBytes { pair.server.writePlaintext($0) })
            let added = pair.server.pendingCiphertext - before
            XCTAssertLessThanOrEqual(added, TLSRecord.ciphertextBound(plaintextBytes: size), "\(size) bytes")
            XCTAssertGreaterThan(added, size)
            pair.pump()
            _ = pair.readAll(pair.client)
        }
    }

    func testCloseNotifyEachWay() {
        XCTAssertEqual(pair.transfer(Array("last words".utf8), from: pair.client, to: pair.server).received, Array("last words".utf8))
        pair.client.shutdown()
        XCTAssertGreaterThan(pair.client.pendingCiphertext, 0, "close_notify queued")
        XCTAssertFalse([1, 2, 3].withUnsafeBytes { pair.client.writePlaintext($0) }, "nothing written after shutdown")
        pair.pump()
        XCTAssertEqual(pair.readAll(pair.server).last, .closed)
        // The server may still answer before its own close_notify.
        XCTAssertEqual(pair.transfer(Array("bye".utf8), from: pair.server, to: pair.client).received, Array("bye".utf8))
        pair.server.shutdown()
        pair.pump()
        XCTAssertEqual(pair.readAll(pair.client).last, .closed)
        XCTAssertEqual(pair.readAll(pair.server).last, .closed, "stays closed")
    }

    func testShutdownBeforeTheHandshakeQueuesNothing() throws {
        let server = try TLSServerContext(certificateFile: certificates.server.certificate, keyFile: certificates.server.key)
        let session = try TLSSession(server: server)
        session.shutdown()
        XCTAssertEqual(session.pendingCiphertext, 0)
    }

    func testTamperedRecordFailsTheReader() {
        XCTAssertTrue(Array("integrity".utf8).withUnsafeBytes { pair.client.writePlaintext($0) })
        var record = [UInt8](repeating: 0, count: pair.client.pendingCiphertext)
        XCTAssertEqual(record.withUnsafeMutableBytes { pair.client.takeCiphertext(into: $0) }, record.count)
        record[record.count - 1] ^= 0x01
        XCTAssertEqual(record.withUnsafeBytes { pair.server.receiveCiphertext($0) }, record.count)
        XCTAssertEqual(pair.readAll(pair.server).last, .failed(.protocolError))
        XCTAssertTrue(pair.server.failureDetail?.contains("bad record mac") == true, pair.server.failureDetail ?? "")
        XCTAssertGreaterThan(pair.server.pendingCiphertext, 0, "an alert for the client")
    }
}
