import TLS
import XCTest

/// Telling TLS from STUN by a stream's first byte, and the ciphertext bound of a write.
final class TLSRecordTests: XCTestCase {
    func testFirstByteTellsTLSFromSTUNAndChannelData() {
        XCTAssertTrue(TLSSession.looksLikeTLS(firstByte: 0x16))
        for stun: UInt8 in [0x00, 0x01] { XCTAssertFalse(TLSSession.looksLikeTLS(firstByte: stun)) }
        for channel: UInt8 in 0x40...0x4F { XCTAssertFalse(TLSSession.looksLikeTLS(firstByte: channel)) }
        XCTAssertFalse(TLSSession.looksLikeTLS(firstByte: UInt8(ascii: "G")), "HTTP")
        XCTAssertFalse(TLSSession.looksLikeTLS(firstByte: 0x15), "an alert does not open a connection")
    }

    func testCiphertextBoundCountsEveryRecord() {
        let overhead = TLSRecord.maximumOverheadPerRecord
        XCTAssertEqual(TLSRecord.ciphertextBound(plaintextBytes: 0), overhead + TLSRecord.reservedBytes)
        XCTAssertEqual(TLSRecord.ciphertextBound(plaintextBytes: 1_500), 1_500 + overhead + TLSRecord.reservedBytes)
        XCTAssertEqual(TLSRecord.ciphertextBound(plaintextBytes: 16_384), 16_384 + overhead + TLSRecord.reservedBytes)
        XCTAssertEqual(TLSRecord.ciphertextBound(plaintextBytes: 16_385), 16_385 + 2 * overhead + TLSRecord.reservedBytes)
        XCTAssertLessThanOrEqual(TLSRecord.ciphertextBound(plaintextBytes: TLSRecord.maximumPlaintextPerRecord), 20 << 10,
                                 "the default buffer fits a full record")
    }
}
