/// The header at the start of every generated datagram, little-endian:
///
/// | offset | bytes | field |
/// |---|---|---|
/// | 0 | 4 | magic `MRLG` |
/// | 4 | 4 | stream id |
/// | 8 | 8 | sequence number (`latchSequence` marks a latching datagram) |
/// | 16 | 8 | send time, CLOCK_MONOTONIC ns (same host only) |
/// | 24 | 1 | TOS byte the sender set |
/// | 25 | 7 | zero |
public struct PayloadHeader: Sendable, Equatable {
    public static let size = 32
    public static let magic: UInt32 = 0x474C_524D  // "MRLG" read little-endian
    /// Sequence number of the datagrams that latch a leg; never counted in statistics.
    public static let latchSequence = UInt64.max

    public var stream: UInt32
    public var sequence: UInt64
    public var sendTime: UInt64
    public var tos: UInt8

    public init(stream: UInt32, sequence: UInt64, sendTime: UInt64, tos: UInt8) {
        self.stream = stream
        self.sequence = sequence
        self.sendTime = sendTime
        self.tos = tos
    }

    /// Writes the header into `buffer`, which must hold at least `size` bytes.
    @inline(__always)
    public func encode(into buffer: UnsafeMutableRawPointer) {
        buffer.storeBytes(of: Self.magic.littleEndian, toByteOffset: 0, as: UInt32.self)
        buffer.storeBytes(of: stream.littleEndian, toByteOffset: 4, as: UInt32.self)
        buffer.storeBytes(of: sequence.littleEndian, toByteOffset: 8, as: UInt64.self)
        buffer.storeBytes(of: sendTime.littleEndian, toByteOffset: 16, as: UInt64.self)
        buffer.storeBytes(of: tos, toByteOffset: 24, as: UInt8.self)
        (buffer + 25).initializeMemory(as: UInt8.self, repeating: 0, count: 7)
    }

    /// Reads a header, or nil when the datagram is too short or not ours.
    @inline(__always)
    public static func decode(_ buffer: UnsafeRawPointer, length: Int) -> PayloadHeader? {
        guard length >= size,
              UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: 0, as: UInt32.self)) == magic
        else { return nil }
        return PayloadHeader(
            stream: UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: 4, as: UInt32.self)),
            sequence: UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
            sendTime: UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
            tos: buffer.load(fromByteOffset: 24, as: UInt8.self))
    }
}
