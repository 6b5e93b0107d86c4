import FuzzSupport
import NetAddress
@testable import STUN

/// A STUN message parsed and every attribute read with every accessor; then the same bytes
/// with their header, MESSAGE-INTEGRITY, MESSAGE-INTEGRITY-SHA256 and FINGERPRINT made right
/// (as a client that holds the key would send them), which must parse, and whose integrity
/// must check under the key and fail under another. The first byte picks whether the bytes
/// are made right, so both the refusals and the paths behind a valid MAC are reached.
func fuzzSTUN(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(data, count)
    let signed = input.take() & 1 == 1
    var bytes = Array(input.rest)
    if signed { sign(&bytes) }
    let parsed = try? StunMessage(bytes: bytes)
    if let message = parsed { readEverything(message) }
    // The parse of the bytes in place (the packet path's) agrees with the copying one.
    let inPlace = bytes.withUnsafeBytes { try? AttributeIndex(parsing: $0) }
    expect((inPlace == nil) == (parsed == nil), "the in-place and copying parses disagree")
    guard signed, let message = parsed, message.integrityType != nil else { return 0 }
    expect(message.integrity(key: key) == .valid, "a MAC computed over the message does not verify")
    expect(message.integrity(key: otherKey) == .invalid, "a MAC verifies under another key")
    return 0
}

let key = Array("fuzzing key".utf8)
let otherKey = Array("another key".utf8)

/// Makes the header's length and cookie right, then fills each integrity attribute with its
/// MAC and a last FINGERPRINT with its CRC, in message order as a sender computes them.
func sign(_ bytes: inout [UInt8]) {
    guard bytes.count >= AttributeIndex.headerSize, bytes.count % 4 == 0, bytes.count - AttributeIndex.headerSize <= 0xFFFF else { return }
    bytes[0] &= 0x3F
    let length = bytes.count - AttributeIndex.headerSize
    bytes[2] = UInt8(length >> 8)
    bytes[3] = UInt8(length & 0xFF)
    bytes.replaceSubrange(4..<8, with: [0x21, 0x12, 0xA4, 0x42])
    var position = AttributeIndex.headerSize
    while position + 4 <= bytes.count {
        let type = AttributeType(rawValue: UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1]))
        let valueLength = Int(bytes[position + 2]) << 8 | Int(bytes[position + 3])
        let value = position + 4
        guard value + valueLength <= bytes.count else { return }
        if type == .messageIntegrity || type == .messageIntegritySHA256, valueLength <= 32 {
            let mac = bytes.withUnsafeBytes { MessageIntegrity.mac(type, key: key, message: $0, attributeOffset: position, length: valueLength) }
            bytes.replaceSubrange(value..<(value + valueLength), with: mac[0..<min(valueLength, mac.count)])
        } else if type == .fingerprint, valueLength == 4, value + 4 == bytes.count {
            let crc = bytes.withUnsafeBytes { Fingerprint.value(of: UnsafeRawBufferPointer(rebasing: $0[0..<position])) }
            bytes.replaceSubrange(value..<(value + 4), with: [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
        }
        position = value + (valueLength + 3) & ~3
    }
}

/// Every accessor over every indexed attribute, and every value decoder over every value,
/// whatever its type: a decoder must refuse what it cannot read, never trap.
func readEverything(_ message: StunMessage) {
    _ = message.unknownRequired { _ in false }
    _ = message.integrityType
    _ = message.index.hasFingerprint
    for position in 0..<message.index.count {
        let slot = message.index[position]
        expect(slot.offset + slot.length <= message.bytes.count, "an indexed value runs past the message")
        _ = try? message.text(slot.type)
        _ = try? message.xorAddress(slot.type)
        _ = try? message.xorAddresses(slot.type)
        _ = try? message.plainAddress(slot.type)
        message.bytes.withUnsafeBytes { raw in
            let value = UnsafeRawBufferPointer(rebasing: raw[slot.offset..<(slot.offset + slot.length)])
            _ = AttributeValue.uint32(value)
            _ = AttributeValue.channelNumber(value)
            _ = AttributeValue.requestedTransport(value)
            _ = AttributeValue.addressFamily(value)
            _ = AttributeValue.evenPortReservesNext(value)
            _ = AttributeValue.reservationToken(value)
            _ = AttributeValue.errorCode(value)
            _ = AttributeValue.passwordAlgorithm(value)
            _ = AttributeValue.passwordAlgorithms(value)
            _ = AttributeValue.unknownAttributes(value)
            _ = AttributeValue.text(value, maximum: 763)
            _ = XORAddress.decode(value, message.transactionID)
            _ = PlainAddress.decode(value)
        }
    }
}
