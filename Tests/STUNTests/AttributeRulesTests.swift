import NetAddress
import STUN
import XCTest

/// What a receiver processes of a well-formed message (RFC 8489 sections 14, 14.5, 14.6):
/// attributes after an integrity attribute are ignored, yet the MAC still verifies over the
/// bytes before it; of a repeated attribute only the first counts.
final class AttributeRulesTests: XCTestCase {
    let key = LongTermKey.derive(username: "alice", realm: "north.gov", password: "secret")

    /// An authenticated Allocate as a client sends it, up to and including MESSAGE-INTEGRITY.
    func signedAllocate() -> MessageBuilder {
        var builder = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        builder.append(.requestedTransport, [17, 0, 0, 0])
        builder.append(.username, text: "alice")
        builder.append(.realm, text: "north.gov")
        builder.append(.nonce, text: "n0nce")
        builder.appendIntegrity(key: key)
        return builder
    }

    func testAttributesAfterIntegrityAreIgnoredAndTheMACStillVerifies() throws {
        var builder = signedAllocate()
        builder.append(.software, text: "appended")
        builder.append(AttributeType(rawValue: 0x7F01), [1, 2, 3, 4])  // comprehension-required, unknown
        builder.append(.lifetime, uint32: 0)
        builder.append(.xorPeerAddress, xorAddress: Endpoint(host: "203.0.113.9", port: 4)!)
        var message = try StunMessage(bytes: builder.bytes)
        XCTAssertEqual(message.integrity(key: key), .valid)
        XCTAssertEqual(message.integrity(key: [1]), .invalid)
        XCTAssertEqual(message.integrityType, .messageIntegrity)
        XCTAssertEqual(message.index.count, 5, "REQUESTED-TRANSPORT, USERNAME, REALM, NONCE, MESSAGE-INTEGRITY")
        XCTAssertFalse(message.contains(.software))
        XCTAssertNil(try message.value(.lifetime, AttributeValue.uint32))
        XCTAssertEqual(try message.xorAddresses(.xorPeerAddress), [])
        XCTAssertEqual(message.unknownRequired { _ in false }.count, 5, "the unknown 0x7f01 is not among them")
        XCTAssertFalse(message.unknownRequired { _ in false }.contains(AttributeType(rawValue: 0x7F01)))

        // The MAC covers the bytes before it alone: what follows may change, what precedes may not.
        var bytes = builder.bytes
        bytes[bytes.count - 1] ^= 0xFF
        XCTAssertEqual(try StunMessage(bytes: bytes).integrity(key: key), .valid)
        bytes = builder.bytes
        bytes[AttributeIndex.headerSize + 4] ^= 1
        XCTAssertEqual(try StunMessage(bytes: bytes).integrity(key: key), .invalid)

        // FINGERPRINT after the ignored attributes still counts, over the whole message.
        builder.appendFingerprint()
        message = try StunMessage(bytes: builder.bytes)
        XCTAssertTrue(message.index.hasFingerprint)
        XCTAssertEqual(message.integrity(key: key), .valid)
        XCTAssertEqual(message.index.count, 6)
    }

    func testSHA256AfterIgnoredAttributesStillCounts() throws {
        var builder = signedAllocate()
        builder.append(.software, text: "between")
        builder.appendIntegrity(.messageIntegritySHA256, key: key)
        let message = try StunMessage(bytes: builder.bytes)
        XCTAssertEqual(message.integrityType, .messageIntegritySHA256)
        XCTAssertEqual(message.integrity(key: key), .valid)
        XCTAssertFalse(message.contains(.software))
    }

    func testOnlyFingerprintCountsAfterSHA256() throws {
        var builder = MessageBuilder(MessageType(.refresh, .request), transactionID: .random())
        builder.append(.lifetime, uint32: 600)
        builder.appendIntegrity(.messageIntegritySHA256, key: key)
        builder.appendIntegrity(.messageIntegrity, key: [2])
        builder.append(.lifetime, uint32: 0)
        builder.appendFingerprint()
        let message = try StunMessage(bytes: builder.bytes)
        XCTAssertNil(message.index.integrity, "MESSAGE-INTEGRITY after MESSAGE-INTEGRITY-SHA256 is ignored")
        XCTAssertEqual(message.integrityType, .messageIntegritySHA256)
        XCTAssertEqual(message.integrity(key: key), .valid)
        XCTAssertEqual(try message.value(.lifetime, AttributeValue.uint32), 600)
        XCTAssertTrue(message.index.hasFingerprint)
        XCTAssertEqual(message.index.count, 3)
    }

    func testRepeatedAttributesTakeTheFirst() throws {
        var builder = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        builder.append(.software, text: "first")
        builder.append(.requestedTransport, [17, 0, 0, 0])
        builder.append(.software, text: "second")
        builder.append(.requestedTransport, [6, 0, 0, 0])
        builder.append(AttributeType(rawValue: 0x7F01), [])
        builder.append(AttributeType(rawValue: 0x7F01), [])
        let message = try StunMessage(bytes: builder.bytes)
        XCTAssertEqual(try message.text(.software), "first")
        XCTAssertEqual(try message.value(.requestedTransport, AttributeValue.requestedTransport), 17)
        XCTAssertEqual(message.index.count, 3)
        XCTAssertEqual(message.unknownRequired { $0 == .requestedTransport }, [AttributeType(rawValue: 0x7F01)],
                       "a 420 names an unknown attribute once")

        // Those that may repeat all count.
        var peers = MessageBuilder(MessageType(.createPermission, .request), transactionID: .random())
        let first = Endpoint(host: "203.0.113.9", port: 1)!, second = Endpoint(host: "2001:db8::7", port: 2)!
        peers.append(.xorPeerAddress, xorAddress: first)
        peers.append(.xorPeerAddress, xorAddress: second)
        XCTAssertEqual(try StunMessage(bytes: peers.bytes).xorAddresses(.xorPeerAddress), [first, second])
    }

    /// The packet path parses Send indications in place: a repeated DATA sends the first.
    func testSendIndicationWithDataTwiceKeepsTheFirst() throws {
        var builder = MessageBuilder(MessageType(.send, .indication), transactionID: .random())
        builder.append(.xorPeerAddress, xorAddress: Endpoint(host: "203.0.113.9", port: 1)!)
        builder.append(.data, [1, 2, 3])
        builder.append(.data, [4, 5, 6, 7, 8])
        let index = try builder.bytes.withUnsafeBytes { raw in
            Result { () throws(MessageError) in try AttributeIndex(parsing: raw) }
        }.get()
        XCTAssertEqual(index.first(.data)?.length, 3)
        XCTAssertEqual(index.count, 2)
    }
}
