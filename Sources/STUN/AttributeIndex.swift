/// Where one attribute's value lies in its message.
public struct AttributeSlot: Sendable, Equatable {
    public var type: AttributeType
    /// Offset of the value from the start of the message (past the 4-byte TLV header).
    public var offset: Int
    public var length: Int

    /// Offset of the attribute's own header.
    public var headerOffset: Int { offset - 4 }
}

/// The parsed view of a STUN message: header fields and where each attribute a receiver
/// processes lies, checked against every rule of RFC 8489 (sizes, cookie, padding,
/// FINGERPRINT last, the fingerprint's CRC). It holds offsets, not bytes, and parsing never
/// allocates, so the packet path (Send indications) can parse in place. Any input is either
/// indexed or refused with a `MessageError`: never a crash.
///
/// The index holds what RFC 8489 says to process, so no reader can act on the rest: the
/// first attribute of each type (every one of the types that `mayRepeat`), and after an
/// integrity attribute only a MESSAGE-INTEGRITY-SHA256 that follows MESSAGE-INTEGRITY and
/// FINGERPRINT (sections 14, 14.5, 14.6). The others are walked for their shape, on which
/// finding the next attribute depends, and then skipped: refusing the message would leave a
/// client that follows the RFC without an answer.
public struct AttributeIndex: Sendable {
    public static let headerSize = 20
    public static let magicCookie: UInt32 = 0x2112_A442
    /// A bound on attributes per message, skipped ones included, so that the walk stays as
    /// short as the index: real TURN messages carry about ten.
    public static let capacity = 24

    public let type: MessageType
    public let transactionID: TransactionID
    /// The whole message, header included.
    public let size: Int
    /// Attributes indexed: those processed, not every one the message carries.
    public private(set) var count = 0
    private var slots = InlineArray<24, AttributeSlot>(repeating: AttributeSlot(type: .data, offset: 0, length: 0))
    /// Index of MESSAGE-INTEGRITY / MESSAGE-INTEGRITY-SHA256, if present.
    public private(set) var integrity: Int?
    public private(set) var integritySHA256: Int?

    public init(parsing bytes: UnsafeRawBufferPointer) throws(MessageError) {
        guard bytes.count >= AttributeIndex.headerSize else { throw .shorterThanHeader(bytes.count) }
        let rawType = bytes.bigEndianUInt16(at: 0)
        guard rawType & 0xC000 == 0 else { throw .notSTUN }
        let cookie = bytes.bigEndianUInt32(at: 4)
        guard cookie == AttributeIndex.magicCookie else { throw .badMagicCookie(cookie) }
        let length = Int(bytes.bigEndianUInt16(at: 2))
        guard length % 4 == 0 else { throw .lengthNotMultipleOfFour(length) }
        guard length == bytes.count - AttributeIndex.headerSize else {
            throw .lengthMismatch(header: length, datagram: bytes.count - AttributeIndex.headerSize)
        }
        type = MessageType(wire: rawType)
        transactionID = TransactionID(reading: bytes, at: 8)
        size = bytes.count

        var position = AttributeIndex.headerSize
        var fingerprint = false
        var walked = 0
        while position < size {
            // Attributes start 4-aligned and the size is a multiple of 4: a header always fits.
            let attribute = AttributeType(rawValue: bytes.bigEndianUInt16(at: position))
            let valueLength = Int(bytes.bigEndianUInt16(at: position + 2))
            let valueOffset = position + 4
            guard valueOffset + valueLength <= size else { throw .attributeOverrun(attribute) }
            // The size and the offset are multiples of 4, so the padding fits too: a value that
            // lacks its padding shows as a length not a multiple of 4, refused above.
            let next = valueOffset + (valueLength + 3) & ~3
            // Unlike the integrity attributes, FINGERPRINT MUST be last (RFC 8489 section
            // 14.7): its CRC counts a length that ends with it, so trailing bytes would go
            // unchecked in the one attribute that tells STUN from other traffic.
            if fingerprint { throw .fingerprintNotLast }
            guard walked < AttributeIndex.capacity else { throw .tooManyAttributes }
            walked += 1
            position = next
            if skipped(attribute) { continue }
            slots[count] = AttributeSlot(type: attribute, offset: valueOffset, length: valueLength)
            switch attribute {
            case .messageIntegrity:
                guard valueLength == 20 else { throw .badValue(attribute) }
                integrity = count
            case .messageIntegritySHA256:
                guard valueLength >= 16 && valueLength <= 32 && valueLength % 4 == 0 else { throw .badValue(attribute) }
                integritySHA256 = count
            case .fingerprint:
                guard valueLength == 4 else { throw .badValue(attribute) }
                fingerprint = true
            default: break
            }
            count += 1
        }
        // Checked once the attribute is known to be last, so the header's length covers it.
        if fingerprint {
            let prefix = UnsafeRawBufferPointer(rebasing: bytes[0..<(size - 8)])
            guard Fingerprint.value(of: prefix) == bytes.bigEndianUInt32(at: size - 4) else { throw .badFingerprint }
        }
    }

    /// Whether the receiver ignores `attribute` at this point of the walk: it follows an
    /// integrity attribute, so no MAC covers it (RFC 8489 sections 14.5 and 14.6), or it
    /// repeats a type of which only the first counts (section 14).
    private func skipped(_ attribute: AttributeType) -> Bool {
        if attribute != .fingerprint {
            if integritySHA256 != nil { return true }
            if integrity != nil && attribute != .messageIntegritySHA256 { return true }
        }
        return !attribute.mayRepeat && first(attribute) != nil
    }

    public subscript(index: Int) -> AttributeSlot { slots[index] }

    /// The first attribute of `type`, if any.
    public func first(_ type: AttributeType) -> AttributeSlot? {
        for index in 0..<count where slots[index].type == type { return slots[index] }
        return nil
    }

    public var hasFingerprint: Bool { count > 0 && slots[count - 1].type == .fingerprint }
}
