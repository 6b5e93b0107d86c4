/// Cuts STUN messages and ChannelData out of a byte stream (TURN over TCP or TLS, RFC 8656
/// section 12.5 and RFC 8489 section 6.2.2). A stream has no datagram boundaries, so each
/// message's length comes from its own header: 20 bytes plus the STUN length field, or 4 bytes
/// plus ChannelData's length, the latter padded to a multiple of 4 on a stream.
///
/// A value, no buffer: the owner keeps the stream's bytes and asks about the front of them.
/// Anything that cannot start a message is an error that ends the connection, because after
/// it no later byte can be trusted to start one either.
public enum StreamFrame: Equatable, Sendable {
    /// A whole message at the front: `length` bytes of it (what a datagram would have held)
    /// and `consumed` bytes to drop from the stream (its padding included).
    case message(length: Int, consumed: Int)
    /// The front is the start of a message whose rest has not arrived yet.
    case incomplete
    /// The front cannot start a message: the connection must close.
    case invalid(StreamFrameError)

    /// What is at the front of `bytes`. A message longer than `maximum` bytes is refused as
    /// soon as its header says so (for STUN, once the magic cookie has arrived too), before its
    /// body arrives: the owner's buffer need only be that large. `stunOnly` refuses ChannelData at the front: a connection's first message
    /// must be STUN, since ChannelData needs a channel bound before.
    public static func front(of bytes: UnsafeRawBufferPointer, maximum: Int = 65_535 + AttributeIndex.headerSize,
                             stunOnly: Bool = false) -> StreamFrame {
        // Even one byte tells STUN and ChannelData from garbage.
        if bytes.count > 0 && !(stunOnly ? bytes[0] <= 0x01 : startsMessage(bytes[0])) { return .invalid(.notTURN) }
        guard bytes.count >= ChannelData.headerSize else { return .incomplete }
        let declared = Int(bytes.bigEndianUInt16(at: 2))
        let length: Int
        let consumed: Int
        if ChannelData.isChannelData(bytes[0]) {
            guard ChannelData.channels.contains(bytes.bigEndianUInt16(at: 0)) else { return .invalid(.badChannel) }
            length = ChannelData.headerSize + declared
            consumed = (length + 3) & ~3
        } else if bytes[0] & 0xC0 == 0 {
            // A STUN length counts whole attributes: always a multiple of 4.
            guard declared & 3 == 0 else { return .invalid(.badLength) }
            // The cookie is judged before the size, so the reason a stream is refused for (a
            // stats label) does not depend on where TCP cut its first bytes.
            guard bytes.count >= 8 else { return .incomplete }
            if bytes.bigEndianUInt32(at: 4) != AttributeIndex.magicCookie { return .invalid(.notTURN) }
            length = AttributeIndex.headerSize + declared
            consumed = length
        } else {
            return .invalid(.notTURN)
        }
        guard length <= maximum else { return .invalid(.tooLarge) }
        return bytes.count >= consumed ? .message(length: length, consumed: consumed) : .incomplete
    }

    /// Whether a first byte may start a STUN message (leading bits 00, and a message type whose
    /// top byte is 0 or 1) or ChannelData (leading bits 01). A TLS record (0x16), an HTTP
    /// request ('G', 'P') and most other protocols fail here at their first byte.
    @inline(__always)
    public static func startsMessage(_ first: UInt8) -> Bool {
        ChannelData.isChannelData(first) || first <= 0x01
    }
}

/// Why a stream's bytes cannot be TURN: a stats label each, so the names stay stable.
public enum StreamFrameError: String, Equatable, Sendable {
    /// Neither STUN nor ChannelData (another protocol, TLS on a plaintext port, garbage).
    case notTURN = "not_turn"
    /// A STUN length that is not a multiple of 4.
    case badLength = "bad_length"
    /// ChannelData on a number outside the channel range.
    case badChannel = "bad_channel"
    /// A message longer than the relay accepts.
    case tooLarge = "too_large"
}
