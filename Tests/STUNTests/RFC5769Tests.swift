import NetAddress
import STUN
import XCTest

/// Every RFC 5769 vector and the corrected RFC 8489 SHA-256 vector: parsed, their attributes
/// read, FINGERPRINT and MESSAGE-INTEGRITY verified, and where the vector's padding is zeros
/// (ours always is) rebuilt byte for byte by MessageBuilder.
final class RFC5769Tests: XCTestCase {
    func testRequestVector() throws {
        let message = try StunMessage(bytes: Vectors.request)
        XCTAssertEqual(message.type, MessageType(.binding, .request))
        XCTAssertEqual(message.transactionID.description, "b7e7a701bc34d686fa87dfae")
        XCTAssertEqual(try message.text(.software), "STUN test client")
        XCTAssertEqual(try message.text(.username), "evtj:h6vY")
        XCTAssertTrue(message.index.hasFingerprint)
        XCTAssertEqual(message.integrity(key: Array(Vectors.shortTermPassword.utf8)), .valid)
        XCTAssertEqual(message.integrity(key: Array("wrong".utf8)), .invalid)
    }

    func testIPv4ResponseVector() throws {
        let message = try StunMessage(bytes: Vectors.responseIPv4)
        XCTAssertEqual(message.type, MessageType(.binding, .successResponse))
        XCTAssertEqual(try message.text(.software), "test vector")
        XCTAssertEqual(try message.xorAddress(.xorMappedAddress), Endpoint(host: "192.0.2.1", port: 32853))
        XCTAssertEqual(message.integrity(key: Array(Vectors.shortTermPassword.utf8)), .valid)
        try assertRebuiltAddress(message, Endpoint(host: "192.0.2.1", port: 32853)!)
    }

    func testIPv6ResponseVector() throws {
        let message = try StunMessage(bytes: Vectors.responseIPv6)
        let address = Endpoint(host: "2001:db8:1234:5678:11:2233:4455:6677", port: 32853)!
        XCTAssertEqual(try message.xorAddress(.xorMappedAddress), address)
        XCTAssertEqual(message.integrity(key: Array(Vectors.shortTermPassword.utf8)), .valid)
        try assertRebuiltAddress(message, address)
    }

    func testLongTermCredentialVector() throws {
        let message = try StunMessage(bytes: Vectors.longTerm)
        XCTAssertEqual(try message.text(.username), Vectors.username)
        XCTAssertEqual(try message.text(.nonce), Vectors.nonce)
        XCTAssertEqual(try message.text(.realm), Vectors.realm)
        let key = LongTermKey.derive(username: Vectors.username, realm: Vectors.realm, password: Vectors.password)
        XCTAssertEqual(message.integrity(key: key), .valid)

        var builder = MessageBuilder(message.type, transactionID: message.transactionID)
        builder.append(.username, text: Vectors.username)
        builder.append(.nonce, text: Vectors.nonce)
        builder.append(.realm, text: Vectors.realm)
        builder.appendIntegrity(key: key)
        XCTAssertEqual(builder.bytes, Vectors.longTerm)
    }

    func testSHA256VectorAsCorrectedByErratum6268() throws {
        let message = try StunMessage(bytes: Vectors.sha256)
        XCTAssertEqual(try message.text(.nonce), Vectors.sha256Nonce)
        XCTAssertEqual(try message.text(.realm), Vectors.realm)
        XCTAssertEqual(try message.value(.passwordAlgorithm, AttributeValue.passwordAlgorithm), .sha256)
        XCTAssertEqual(message.integrityType, .messageIntegritySHA256)
        let key = LongTermKey.derive(username: Vectors.username, realm: Vectors.realm, password: Vectors.password,
                                     algorithm: .sha256)
        XCTAssertEqual(message.integrity(key: key), .valid)
        let md5Key = LongTermKey.derive(username: Vectors.username, realm: Vectors.realm, password: Vectors.password)
        XCTAssertEqual(message.integrity(key: md5Key), .invalid)

        var builder = MessageBuilder(message.type, transactionID: message.transactionID)
        builder.append(.userhash, Array(Vectors.sha256[24..<56]))
        builder.append(.nonce, text: Vectors.sha256Nonce)
        builder.append(.realm, text: Vectors.realm)
        builder.append(.passwordAlgorithm, [0, 2, 0, 0])
        builder.appendIntegrity(.messageIntegritySHA256, key: key)
        XCTAssertEqual(builder.bytes, Vectors.sha256)
    }

    /// The vector's XOR-MAPPED-ADDRESS attribute, written again by our encoder.
    private func assertRebuiltAddress(_ message: StunMessage, _ address: Endpoint) throws {
        var builder = MessageBuilder(message.type, transactionID: message.transactionID)
        builder.append(.xorMappedAddress, xorAddress: address)
        let slot = try XCTUnwrap(message.index.first(.xorMappedAddress))
        XCTAssertEqual(Array(builder.bytes[24...]), Array(message.bytes[slot.offset..<(slot.offset + slot.length)]))
    }
}
