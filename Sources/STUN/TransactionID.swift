/// The 96-bit transaction identifier of a STUN message, held as two integers so it is cheap
/// to compare and hash (the transaction cache keys on it).
public struct TransactionID: Hashable, Sendable, CustomStringConvertible {
    public var high: UInt32
    public var low: UInt64

    public init(high: UInt32, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A fresh identifier from the system's cryptographic random source (control path).
    public static func random() -> TransactionID {
        let bytes = Digest.random(count: 12)
        return bytes.withUnsafeBytes { TransactionID(reading: $0, at: 0) }
    }

    /// Reads the 12 bytes at `offset` (8 for a message header).
    public init(reading bytes: UnsafeRawBufferPointer, at offset: Int) {
        high = bytes.bigEndianUInt32(at: offset)
        low = UInt64(bytes.bigEndianUInt32(at: offset + 4)) << 32 | UInt64(bytes.bigEndianUInt32(at: offset + 8))
    }

    public func write(to bytes: UnsafeMutableRawBufferPointer, at offset: Int) {
        bytes.storeBigEndian(high, at: offset)
        bytes.storeBigEndian(UInt32(truncatingIfNeeded: low >> 32), at: offset + 4)
        bytes.storeBigEndian(UInt32(truncatingIfNeeded: low), at: offset + 8)
    }

    public var description: String {
        let text = String(high, radix: 16) + String(low, radix: 16)
        return String(repeating: "0", count: max(0, 24 - text.count)) + text
    }
}
