import NetAddress

/// MAPPED-ADDRESS and ALTERNATE-SERVER (RFC 8489 sections 14.1 and 14.15): a reserved byte,
/// the address family, the port and the address as they are, not XORed. RFC 8489 keeps
/// ALTERNATE-SERVER in this form on purpose: it names another server, not the client's own
/// address, so no middlebox rewriting the client's address would touch it anyway.
public enum PlainAddress {
    /// Bytes of the value for an endpoint: 8 for IPv4 (an IPv4-mapped address too), 20 for IPv6.
    public static func valueLength(of endpoint: Endpoint) -> Int { endpoint.isIPv4 ? 8 : 20 }

    public static func encode(_ endpoint: Endpoint) -> [UInt8] {
        var value: [UInt8] = [0, endpoint.isIPv4 ? 0x01 : 0x02, UInt8(endpoint.port >> 8), UInt8(truncatingIfNeeded: endpoint.port)]
        if endpoint.isIPv4 {
            value += bigEndianBytes(UInt64(endpoint.ipv4Address), count: 4)
        } else {
            value += bigEndianBytes(endpoint.high, count: 8) + bigEndianBytes(endpoint.low, count: 8)
        }
        return value
    }

    /// nil when the family is unknown or the length does not match it.
    public static func decode(_ value: UnsafeRawBufferPointer) -> Endpoint? {
        guard value.count >= 4 else { return nil }
        let port = value.bigEndianUInt16(at: 2)
        switch value[1] {
        case 0x01 where value.count == 8:
            return Endpoint(ipv4: value.bigEndianUInt32(at: 4), port: port)
        case 0x02 where value.count == 20:
            let high = UInt64(value.bigEndianUInt32(at: 4)) << 32 | UInt64(value.bigEndianUInt32(at: 8))
            let low = UInt64(value.bigEndianUInt32(at: 12)) << 32 | UInt64(value.bigEndianUInt32(at: 16))
            return Endpoint(high: high, low: low, port: port)
        default:
            return nil
        }
    }

    private static func bigEndianBytes(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * (count - 1 - $0))) }
    }
}

extension MessageBuilder {
    /// An address attribute in the plain form (ALTERNATE-SERVER, MAPPED-ADDRESS).
    public mutating func append(_ type: AttributeType, plainAddress endpoint: Endpoint) {
        append(type, PlainAddress.encode(endpoint))
    }
}

extension StunMessage {
    /// A plain-form address attribute: nil when absent, `badValue` when malformed.
    public func plainAddress(_ type: AttributeType) throws(MessageError) -> Endpoint? {
        try value(type, PlainAddress.decode)
    }
}
