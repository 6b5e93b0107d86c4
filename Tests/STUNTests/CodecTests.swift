import NetAddress
import STUN
import XCTest

/// Messages built by MessageBuilder parse back to the same values; every message type
/// round-trips through the wire encoding; ChannelData and Data indications frame correctly.
final class CodecTests: XCTestCase {
    func testMessageTypesRoundTrip() {
        for method in [Method.binding, .allocate, .refresh, .send, .data, .createPermission, .channelBind, Method(rawValue: 0xFFF)] {
            for messageClass in [MessageClass.request, .indication, .successResponse, .errorResponse] {
                let type = MessageType(method, messageClass)
                XCTAssertEqual(MessageType(wire: type.wire), type)
                XCTAssertEqual(type.wire & 0xC000, 0)
            }
        }
        XCTAssertEqual(MessageType(.allocate, .request).wire, 0x0003)
        XCTAssertEqual(MessageType(.allocate, .successResponse).wire, 0x0103)
        XCTAssertEqual(MessageType(.allocate, .errorResponse).wire, 0x0113)
        XCTAssertEqual(MessageType(.data, .indication).wire, 0x0017)
    }

    func testEveryAttributeRoundTrips() throws {
        let id = TransactionID.random()
        let peer4 = Endpoint(host: "203.0.113.9", port: 40000)!
        let peer6 = Endpoint(host: "2001:db8::7", port: 5)!
        var builder = MessageBuilder(MessageType(.allocate, .errorResponse), transactionID: id)
        builder.append(error: .allocationQuotaReached)
        builder.append(.xorPeerAddress, xorAddress: peer4)
        builder.append(.xorPeerAddress, xorAddress: peer6)
        builder.append(.xorRelayedAddress, xorAddress: peer6)
        builder.append(.lifetime, uint32: 3600)
        builder.append(.channelNumber, [0x40, 0x01, 0, 0])
        builder.append(.requestedTransport, [17, 0, 0, 0])
        builder.append(.requestedAddressFamily, [2, 0, 0, 0])
        builder.append(.evenPort, [0x80])
        builder.append(.reservationToken, [1, 2, 3, 4, 5, 6, 7, 8])
        builder.append(.passwordAlgorithms, [0, 2, 0, 0, 0, 1, 0, 0])
        builder.append(.unknownAttributes, [0x00, 0x31, 0x7F, 0xFF])
        builder.append(.realm, text: "example.org")
        builder.append(.software, text: "mediarelay")
        builder.appendIntegrity(key: [9, 9, 9])
        builder.appendFingerprint()

        let message = try StunMessage(bytes: builder.bytes)
        XCTAssertEqual(message.transactionID, id)
        XCTAssertEqual(try message.value(.errorCode, AttributeValue.errorCode)?.code, 486)
        XCTAssertEqual(try message.value(.errorCode, AttributeValue.errorCode)?.reason, "Allocation Quota Reached")
        XCTAssertEqual(try message.xorAddresses(.xorPeerAddress), [peer4, peer6])
        XCTAssertEqual(try message.xorAddress(.xorRelayedAddress), peer6)
        XCTAssertEqual(try message.value(.lifetime, AttributeValue.uint32), 3600)
        XCTAssertEqual(try message.value(.channelNumber, AttributeValue.channelNumber), 0x4001)
        XCTAssertEqual(try message.value(.requestedTransport, AttributeValue.requestedTransport), 17)
        XCTAssertEqual(try message.value(.requestedAddressFamily, AttributeValue.addressFamily), .ipv6)
        XCTAssertEqual(try message.value(.evenPort, AttributeValue.evenPortReservesNext), true)
        XCTAssertEqual(try message.value(.reservationToken, AttributeValue.reservationToken), 0x0102_0304_0506_0708)
        XCTAssertEqual(try message.value(.passwordAlgorithms, AttributeValue.passwordAlgorithms), [.sha256, .md5])
        XCTAssertEqual(try message.value(.unknownAttributes, AttributeValue.unknownAttributes),
                       [AttributeType(rawValue: 0x31), AttributeType(rawValue: 0x7FFF)])
        XCTAssertEqual(try message.text(.realm), "example.org")
        XCTAssertEqual(try message.text(.software), "mediarelay")
        XCTAssertEqual(message.integrity(key: [9, 9, 9]), .valid)
        XCTAssertEqual(message.integrity(key: [9, 9, 8]), .invalid)
        XCTAssertNil(try message.text(.nonce))
        XCTAssertEqual(message.unknownRequired { $0 != .reservationToken }, [.reservationToken])
    }

    func testSHA256IntegrityAfterSHA1IntegrityAndTruncated() throws {
        var builder = MessageBuilder(MessageType(.refresh, .request), transactionID: .random())
        builder.appendIntegrity(key: [1])
        builder.appendIntegrity(.messageIntegritySHA256, key: [1])
        builder.appendFingerprint()
        let message = try StunMessage(bytes: builder.bytes)
        XCTAssertEqual(message.integrityType, .messageIntegritySHA256)
        XCTAssertEqual(message.integrity(key: [1]), .valid)

        // A MESSAGE-INTEGRITY-SHA256 truncated to 16 bytes: the length field covers only them.
        var short = MessageBuilder(MessageType(.refresh, .request), transactionID: .random())
        short.append(.lifetime, uint32: 0)
        var bytes = short.bytes + [0x00, 0x1C, 0x00, 0x10] + [UInt8](repeating: 0, count: 16)
        bytes[3] = UInt8(bytes.count - 20)
        var hashed = Array(bytes[0..<(bytes.count - 20)])
        hashed[3] = UInt8(bytes.count - 20)
        let mac = Digest.hmacSHA256(key: [1], hashed)
        bytes.replaceSubrange((bytes.count - 16)..., with: mac[0..<16])
        XCTAssertEqual(try StunMessage(bytes: bytes).integrity(key: [1]), .valid)
    }

    func testChannelDataFraming() {
        var frame: [UInt8] = [0x40, 0x01, 0x00, 0x03, 7, 8, 9]
        frame.withUnsafeBytes { XCTAssertTrue($0.first.map(ChannelData.isChannelData) ?? false) }
        XCTAssertEqual(frame.withUnsafeBytes { ChannelData.parse($0)?.channel }, 0x4001)
        XCTAssertEqual(frame.withUnsafeBytes { ChannelData.parse($0)?.length }, 3)
        frame.append(0)  // optional padding over UDP
        XCTAssertEqual(frame.withUnsafeBytes { ChannelData.parse($0)?.length }, 3)
        XCTAssertNil([UInt8]([0x40, 0x01, 0x00, 0x05, 1, 2]).withUnsafeBytes { ChannelData.parse($0) }, "shorter than its length")
        XCTAssertEqual([UInt8]([0x7F, 0xFF, 0x00, 0x00]).withUnsafeBytes { ChannelData.parse($0)?.channel }, 0x7FFF,
                       "RFC 5766's range, which coturn's clients use")
        XCTAssertNil([UInt8]([0x80, 0x00, 0x00, 0x00]).withUnsafeBytes { ChannelData.parse($0) }, "channel above 0x7FFF")
        XCTAssertNil([UInt8]([0x40, 0x00, 0x00]).withUnsafeBytes { ChannelData.parse($0) }, "short header")
        XCTAssertNil([UInt8]([0x40, 0x00, 0x00, 0x00, 0, 0, 0, 0]).withUnsafeBytes { ChannelData.parse($0) }, "too much trailing")
        var written = [UInt8](repeating: 0xAA, count: 4)
        written.withUnsafeMutableBytes { ChannelData.writeHeader(channel: 0x4FFF, length: 513, to: $0, at: 0) }
        XCTAssertEqual(written, [0x4F, 0xFF, 0x02, 0x01])
    }

    func testDataIndicationParsesAsOne() throws {
        for peer in [Endpoint(host: "198.51.100.1", port: 9)!, Endpoint(host: "2001:db8::1", port: 65535)!] {
            let payload: [UInt8] = [1, 2, 3, 4, 5]
            var buffer = [UInt8](repeating: 0xEE, count: 200)
            let id = TransactionID(high: 1, low: 2)
            let size = buffer.withUnsafeMutableBytes { out in
                payload.withUnsafeBytes { DataIndication.write(peer: peer, payload: $0, id: id, to: out, at: 10) }
            }
            XCTAssertEqual(size, DataIndication.overhead(for: peer) + 8)
            let message = try StunMessage(bytes: Array(buffer[10..<(10 + size)]))
            XCTAssertEqual(message.type, MessageType(.data, .indication))
            XCTAssertEqual(try message.xorAddress(.xorPeerAddress), peer)
            XCTAssertEqual(try message.value(.data) { Array($0) }, payload)
            let tooSmall = buffer.withUnsafeMutableBytes { out in
                payload.withUnsafeBytes { DataIndication.write(peer: peer, payload: $0, id: id, to: out, at: 190) }
            }
            XCTAssertEqual(tooSmall, 0)
        }
    }
}
