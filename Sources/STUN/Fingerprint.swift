/// The FINGERPRINT value (RFC 8489 section 14.7): CRC-32 (ISO HDLC, as in zlib and Ethernet)
/// of the message up to the attribute, XORed with 0x5354554e.
public enum Fingerprint {
    static let xorValue: UInt32 = 0x5354_554E

    /// The reflected CRC-32 table of polynomial 0xEDB88320, computed once.
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? (value >> 1) ^ 0xEDB8_8320 : value >> 1 }
        return value
    }

    /// The value for a message whose bytes before the FINGERPRINT attribute are `prefix` (the
    /// header's length must already count the FINGERPRINT attribute).
    public static func value(of prefix: UnsafeRawBufferPointer) -> UInt32 {
        crc32(prefix) ^ xorValue
    }

    public static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }
}
