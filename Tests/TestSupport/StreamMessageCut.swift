/// How a TURN client over TCP or TLS cuts what the relay sends into messages (RFC 8656
/// section 12.5): a STUN message is its 20-byte header and the length it states, ChannelData
/// its 4-byte header and length, padded to a multiple of 4. A few lines of the tests' own, not
/// the relay's framer, so the relay's framing is checked from outside.
public enum StreamMessageCut {
    /// Takes the first whole message off the front of `received` and returns it (ChannelData
    /// without its padding); nil, leaving `received` as it is, while the message is incomplete.
    public static func next(from received: inout [UInt8]) -> [UInt8]? {
        guard received.count >= 4 else { return nil }
        let length = Int(received[2]) << 8 | Int(received[3])
        let channelData = received[0] & 0xC0 == 0x40
        let size = channelData ? 4 + length : 20 + length
        let padded = channelData ? (size + 3) & ~3 : size
        guard received.count >= padded else { return nil }
        defer { received.removeFirst(padded) }
        return Array(received[0..<size])
    }
}
