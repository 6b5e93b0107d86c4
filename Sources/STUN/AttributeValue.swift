/// Decoders for the values of the attributes a TURN server reads. Each takes exactly the
/// value's bytes and returns nil when they are malformed (the caller answers 400).
public enum AttributeValue {
    /// LIFETIME, and any other 32-bit value.
    public static func uint32(_ value: UnsafeRawBufferPointer) -> UInt32? {
        value.count == 4 ? value.bigEndianUInt32(at: 0) : nil
    }

    /// CHANNEL-NUMBER: the number, then two reserved bytes.
    public static func channelNumber(_ value: UnsafeRawBufferPointer) -> UInt16? {
        value.count == 4 ? value.bigEndianUInt16(at: 0) : nil
    }

    /// REQUESTED-TRANSPORT: the IP protocol number (17 for UDP), then three reserved bytes.
    public static func requestedTransport(_ value: UnsafeRawBufferPointer) -> UInt8? {
        value.count == 4 ? value[0] : nil
    }

    /// REQUESTED-ADDRESS-FAMILY and ADDITIONAL-ADDRESS-FAMILY: 0x01 IPv4, 0x02 IPv6.
    public static func addressFamily(_ value: UnsafeRawBufferPointer) -> AddressFamily? {
        value.count == 4 ? AddressFamily(rawValue: value[0]) : nil
    }

    /// EVEN-PORT: whether the R bit asks to reserve the next port too.
    public static func evenPortReservesNext(_ value: UnsafeRawBufferPointer) -> Bool? {
        value.count == 1 ? value[0] & 0x80 != 0 : nil
    }

    /// RESERVATION-TOKEN: 8 opaque bytes.
    public static func reservationToken(_ value: UnsafeRawBufferPointer) -> UInt64? {
        value.count == 8 ? UInt64(value.bigEndianUInt32(at: 0)) << 32 | UInt64(value.bigEndianUInt32(at: 4)) : nil
    }

    /// ERROR-CODE: the code (class * 100 + number) and the reason phrase.
    public static func errorCode(_ value: UnsafeRawBufferPointer) -> (code: Int, reason: String)? {
        guard value.count >= 4 else { return nil }
        let errorClass = Int(value[2] & 0x07)
        let number = Int(value[3])
        guard (3...6).contains(errorClass), number < 100 else { return nil }
        return (errorClass * 100 + number, String(decoding: value[4...], as: UTF8.self))
    }

    /// PASSWORD-ALGORITHM: the algorithm; its parameters must be empty for MD5 and SHA-256.
    public static func passwordAlgorithm(_ value: UnsafeRawBufferPointer) -> PasswordAlgorithm? {
        guard value.count == 4, value.bigEndianUInt16(at: 2) == 0 else { return nil }
        return PasswordAlgorithm(rawValue: value.bigEndianUInt16(at: 0))
    }

    /// UNKNOWN-ATTRIBUTES and PASSWORD-ALGORITHMS are lists: the 16-bit numbers they carry
    /// (for PASSWORD-ALGORITHMS, each algorithm's parameters are skipped).
    public static func passwordAlgorithms(_ value: UnsafeRawBufferPointer) -> [PasswordAlgorithm]? {
        var list: [PasswordAlgorithm] = []
        var offset = 0
        while offset < value.count {
            guard offset + 4 <= value.count else { return nil }
            let parameters = Int(value.bigEndianUInt16(at: offset + 2))
            guard offset + 4 + parameters <= value.count else { return nil }
            if let known = PasswordAlgorithm(rawValue: value.bigEndianUInt16(at: offset)) { list.append(known) }
            offset += 4 + (parameters + 3) & ~3
        }
        return list
    }

    public static func unknownAttributes(_ value: UnsafeRawBufferPointer) -> [AttributeType]? {
        guard value.count % 2 == 0 else { return nil }
        return stride(from: 0, to: value.count, by: 2).map { AttributeType(rawValue: value.bigEndianUInt16(at: $0)) }
    }

    /// USERNAME, REALM, NONCE, SOFTWARE: UTF-8 text of bounded length (RFC 8489 section 14).
    public static func text(_ value: UnsafeRawBufferPointer, maximum: Int) -> String? {
        guard value.count <= maximum else { return nil }
        return String(validating: value, as: UTF8.self)
    }
}

/// The address family of REQUESTED-ADDRESS-FAMILY and ADDITIONAL-ADDRESS-FAMILY.
public enum AddressFamily: UInt8, Sendable {
    case ipv4 = 0x01, ipv6 = 0x02
}

/// The password algorithms of RFC 8489 section 18.5: which hash derives the long-term key.
public enum PasswordAlgorithm: UInt16, Sendable {
    case md5 = 0x0001, sha256 = 0x0002
}
