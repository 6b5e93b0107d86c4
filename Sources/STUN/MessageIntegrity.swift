/// MESSAGE-INTEGRITY (HMAC-SHA1, 20 bytes) and MESSAGE-INTEGRITY-SHA256 (HMAC-SHA256, 32 bytes
/// or truncated to 16..28): computed over the message up to the attribute, with the header's
/// length set as if the attribute ended the message (RFC 8489 sections 14.5 and 14.6).
enum MessageIntegrity {
    /// The full MAC for an attribute of `type` and `length` value bytes that starts (its
    /// header) at `attributeOffset` of `message`.
    static func mac(_ type: AttributeType, key: [UInt8], message: UnsafeRawBufferPointer,
                    attributeOffset: Int, length: Int) -> [UInt8] {
        var prefix = Array(message[0..<attributeOffset])
        let messageLength = UInt16(attributeOffset - AttributeIndex.headerSize + 4 + length)
        prefix[2] = UInt8(messageLength >> 8)
        prefix[3] = UInt8(truncatingIfNeeded: messageLength)
        return type == .messageIntegrity ? Digest.hmacSHA1(key: key, prefix) : Digest.hmacSHA256(key: key, prefix)
    }

    /// Whether the attribute at `slot` carries the MAC of its message under `key`, compared in
    /// constant time (a truncated MESSAGE-INTEGRITY-SHA256 against the MAC's first bytes).
    static func verify(_ slot: AttributeSlot, key: [UInt8], message: UnsafeRawBufferPointer) -> Bool {
        let expected = mac(slot.type, key: key, message: message, attributeOffset: slot.headerOffset, length: slot.length)
        let received = UnsafeRawBufferPointer(rebasing: message[slot.offset..<(slot.offset + slot.length)])
        return Digest.constantTimeEqual(Array(expected[0..<slot.length]), received)
    }
}
