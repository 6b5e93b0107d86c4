/// ChannelData framing (RFC 8656 section 12.4): a 16-bit channel number, a 16-bit length, then
/// the application data. Over UDP the padding to 4 bytes is optional, so a datagram may be up
/// to 3 bytes longer than the header says.
public enum ChannelData {
    public static let headerSize = 4
    /// RFC 8656 narrowed channels to 0x4000-0x4FFF, but RFC 5766 clients (coturn's own
    /// turnutils_uclient among them) still pick up to 0x7FFF, and coturn accepts them: so do we.
    /// Every such number starts with the bits 01, so it is never mistaken for STUN.
    public static let channels: ClosedRange<UInt16> = 0x4000...0x7FFF

    /// Whether a datagram on a TURN listener is ChannelData (leading bits 01) rather than STUN (00).
    @inline(__always)
    public static func isChannelData(_ firstByte: UInt8) -> Bool { firstByte & 0xC0 == 0x40 }

    /// The channel and the length of the data that follows the header, or nil when the
    /// channel is outside the valid range or the data is shorter than its length says.
    @inline(__always)
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> (channel: UInt16, length: Int)? {
        guard bytes.count >= headerSize else { return nil }
        let channel = bytes.bigEndianUInt16(at: 0)
        let length = Int(bytes.bigEndianUInt16(at: 2))
        guard channels.contains(channel), headerSize + length <= bytes.count, bytes.count <= headerSize + length + 3 else {
            return nil
        }
        return (channel, length)
    }

    @inline(__always)
    public static func writeHeader(channel: UInt16, length: Int, to bytes: UnsafeMutableRawBufferPointer, at offset: Int) {
        bytes.storeBigEndian(channel, at: offset)
        bytes.storeBigEndian(UInt16(length), at: offset + 2)
    }
}
