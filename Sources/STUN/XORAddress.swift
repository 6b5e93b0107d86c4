import NetAddress

/// XOR-MAPPED-ADDRESS, XOR-PEER-ADDRESS and XOR-RELAYED-ADDRESS (RFC 8489 section 14.2): an
/// address family, the port XORed with the cookie's top half, the address XORed with the
/// cookie (IPv4) or the cookie and the transaction id (IPv6).
public enum XORAddress {
    /// Bytes of the value for an endpoint: 8 for IPv4, 20 for IPv6.
    public static func valueLength(of endpoint: Endpoint) -> Int { endpoint.isIPv4 ? 8 : 20 }

    public static func decode(_ value: UnsafeRawBufferPointer, _ id: TransactionID) -> Endpoint? {
        guard value.count >= 4 else { return nil }
        let port = value.bigEndianUInt16(at: 2) ^ UInt16(AttributeIndex.magicCookie >> 16)
        switch value[1] {
        case 0x01 where value.count == 8:
            return Endpoint(ipv4: value.bigEndianUInt32(at: 4) ^ AttributeIndex.magicCookie, port: port)
        case 0x02 where value.count == 20:
            let high = (UInt64(value.bigEndianUInt32(at: 4)) << 32 | UInt64(value.bigEndianUInt32(at: 8)))
                ^ (UInt64(AttributeIndex.magicCookie) << 32 | UInt64(id.high))
            let low = (UInt64(value.bigEndianUInt32(at: 12)) << 32 | UInt64(value.bigEndianUInt32(at: 16))) ^ id.low
            return Endpoint(high: high, low: low, port: port)
        default:
            return nil
        }
    }

    /// Writes the value at `offset` (room for `valueLength(of:)` bytes is the caller's).
    public static func write(_ endpoint: Endpoint, _ id: TransactionID, to bytes: UnsafeMutableRawBufferPointer, at offset: Int) {
        bytes[offset] = 0
        bytes[offset + 1] = endpoint.isIPv4 ? 0x01 : 0x02
        bytes.storeBigEndian(endpoint.port ^ UInt16(AttributeIndex.magicCookie >> 16), at: offset + 2)
        if endpoint.isIPv4 {
            bytes.storeBigEndian(endpoint.ipv4Address ^ AttributeIndex.magicCookie, at: offset + 4)
        } else {
            let high = endpoint.high ^ (UInt64(AttributeIndex.magicCookie) << 32 | UInt64(id.high))
            let low = endpoint.low ^ id.low
            bytes.storeBigEndian(UInt32(truncatingIfNeeded: high >> 32), at: offset + 4)
            bytes.storeBigEndian(UInt32(truncatingIfNeeded: high), at: offset + 8)
            bytes.storeBigEndian(UInt32(truncatingIfNeeded: low >> 32), at: offset + 12)
            bytes.storeBigEndian(UInt32(truncatingIfNeeded: low), at: offset + 16)
        }
    }
}
