import STUN
import XCTest

/// Each malformed shape is refused with its own error, never crashes, and never parses.
final class MalformedMessageTests: XCTestCase {
    func refusal(_ bytes: [UInt8]) -> MessageError? {
        do {
            _ = try StunMessage(bytes: bytes)
            return nil
        } catch {
            return error
        }
    }

    /// A Binding request with the given attributes (already padded) after the header.
    func message(_ attributes: [UInt8], length: Int? = nil) -> [UInt8] {
        let size = length ?? attributes.count
        return [0, 1, UInt8(size >> 8), UInt8(size & 0xFF), 0x21, 0x12, 0xA4, 0x42] + [UInt8](repeating: 3, count: 12) + attributes
    }

    func testHeaderRefusals() {
        XCTAssertEqual(refusal(Array(Vectors.request[0..<19])), .shorterThanHeader(19))
        XCTAssertEqual(refusal([]), .shorterThanHeader(0))
        var bad = Vectors.request
        bad[0] = 0x40
        XCTAssertEqual(refusal(bad), .notSTUN)
        bad = Vectors.request
        bad[5] = 0x13
        XCTAssertEqual(refusal(bad), .badMagicCookie(0x2113_A442))
        XCTAssertEqual(refusal(message([0, 0x24, 0, 1, 0xFF]) ), .lengthNotMultipleOfFour(5))
        XCTAssertEqual(refusal(message([], length: 4)), .lengthMismatch(header: 4, datagram: 0))
        XCTAssertEqual(refusal(Vectors.request + [0, 0, 0, 0]), .lengthMismatch(header: 88, datagram: 92))
    }

    func testAttributeRefusals() {
        // Value runs past the end of the message.
        XCTAssertEqual(refusal(message([0x80, 0x22, 0, 9, 1, 2, 3, 4])), .attributeOverrun(.software))
        // Bad padding: a 5-byte value with its length counted unpadded.
        XCTAssertEqual(refusal(message([0x80, 0x22, 0, 5, 1, 2, 3, 4, 5])), .lengthNotMultipleOfFour(9))
        // MESSAGE-INTEGRITY and MESSAGE-INTEGRITY-SHA256 of the wrong size.
        let integrity: [UInt8] = [0, 0x08, 0, 20] + [UInt8](repeating: 0, count: 20)
        XCTAssertEqual(refusal(message([0, 0x08, 0, 16] + [UInt8](repeating: 0, count: 16))), .badValue(.messageIntegrity))
        let sha256: [UInt8] = [0, 0x1C, 0, 32] + [UInt8](repeating: 0, count: 32)
        XCTAssertNil(refusal(message(integrity + sha256)))
        XCTAssertEqual(refusal(message([0, 0x1C, 0, 12] + [UInt8](repeating: 0, count: 12))), .badValue(.messageIntegritySHA256))
        XCTAssertEqual(refusal(message(integrity + [0, 0x1C, 0, 12] + [UInt8](repeating: 0, count: 12))), .badValue(.messageIntegritySHA256))
        // Too many attributes.
        let many = (0..<(AttributeIndex.capacity + 1)).flatMap { [0x80, UInt8($0), 0, 0] as [UInt8] }
        XCTAssertEqual(refusal(message(many)), .tooManyAttributes)
    }

    /// Attributes a receiver ignores (after an integrity attribute, or repeated) are still
    /// walked: their shape must hold and they count against the bound.
    func testIgnoredAttributesMustStillBeWellFormed() {
        let integrity: [UInt8] = [0, 0x08, 0, 20] + [UInt8](repeating: 0, count: 20)
        let software: [UInt8] = [0x80, 0x22, 0, 4, 0x61, 0x62, 0x63, 0x64]
        XCTAssertEqual(refusal(message(integrity + [0x80, 0x22, 0, 9, 1, 2, 3, 4])), .attributeOverrun(.software))
        XCTAssertEqual(refusal(message(software + [0x80, 0x22, 0, 9, 1, 2, 3, 4])), .attributeOverrun(.software))
        let repeated = [UInt8](Array(repeating: software, count: AttributeIndex.capacity).joined())
        XCTAssertNil(refusal(message(repeated)))
        XCTAssertEqual(refusal(message(repeated + software)), .tooManyAttributes)
        let trailing = [UInt8](Array(repeating: software, count: AttributeIndex.capacity - 1).joined())
        XCTAssertNil(refusal(message(integrity + trailing)))
        XCTAssertEqual(refusal(message(integrity + trailing + software)), .tooManyAttributes)
    }

    func testFingerprintRefusals() {
        var bad = Vectors.request
        bad[bad.count - 1] ^= 1
        XCTAssertEqual(refusal(bad), .badFingerprint)
        bad = Vectors.request
        bad[30] ^= 1  // a byte of SOFTWARE: the CRC no longer matches
        XCTAssertEqual(refusal(bad), .badFingerprint)
        // FINGERPRINT followed by another attribute, even one a receiver would ignore after
        // MESSAGE-INTEGRITY, or by a second FINGERPRINT.
        XCTAssertEqual(refusal(message([0x80, 0x28, 0, 4, 1, 2, 3, 4, 0, 0x0D, 0, 4, 0, 0, 0, 1])), .fingerprintNotLast)
        var builder = MessageBuilder(MessageType(.binding, .request), transactionID: .random())
        builder.appendIntegrity(key: [1])
        builder.appendFingerprint()
        let signed = builder
        builder.append(.software, text: "late")
        XCTAssertEqual(refusal(builder.bytes), .fingerprintNotLast)
        builder = signed
        builder.appendFingerprint()
        XCTAssertEqual(refusal(builder.bytes), .fingerprintNotLast)
        XCTAssertEqual(refusal(message([0x80, 0x28, 0, 2, 1, 2, 0, 0])), .badValue(.fingerprint))
    }

    func testMalformedValuesAreRefusedByTheirReaders() throws {
        let bad = try StunMessage(bytes: message([0, 0x12, 0, 4, 0, 3, 0, 1, 0, 0x0D, 0, 2, 0, 1, 0, 0, 0, 0x06, 0, 2, 0xC3, 0x28, 0, 0]))
        XCTAssertThrowsError(try bad.xorAddress(.xorPeerAddress)) { XCTAssertEqual($0 as? MessageError, .badValue(.xorPeerAddress)) }
        XCTAssertThrowsError(try bad.value(.lifetime, AttributeValue.uint32))
        XCTAssertThrowsError(try bad.text(.username), "invalid UTF-8")
        XCTAssertNil([UInt8]([0, 0, 2, 0]).withUnsafeBytes { AttributeValue.errorCode($0) }, "class 2 is not an error")
        XCTAssertNil([UInt8]([0, 0, 4, 100]).withUnsafeBytes { AttributeValue.errorCode($0) }, "number 100")
        XCTAssertNil([UInt8]([0, 1, 0, 8]).withUnsafeBytes { AttributeValue.passwordAlgorithms($0) }, "parameters overrun")
    }
}
