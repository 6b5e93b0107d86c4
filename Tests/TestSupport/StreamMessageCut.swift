import STUN

/// How a test's TURN client over TCP or TLS cuts what the relay sends into messages: STUN's
/// `StreamFrame`, the one framing rule (RFC 8656 section 12.5) that the relay and the load
/// generator's clients cut with too, over a growing array instead of a fixed buffer.
public enum StreamMessageCut {
    /// Takes the first whole message off the front of `received` and returns it (ChannelData
    /// without its padding); nil, leaving `received` as it is, while the message is incomplete
    /// or when the front cannot start a message (the test then fails waiting for its answer).
    public static func next(from received: inout [UInt8]) -> [UInt8]? {
        guard case .message(let length, let consumed) = received.withUnsafeBytes({ StreamFrame.front(of: $0) }) else { return nil }
        defer { received.removeFirst(consumed) }
        return Array(received[0..<length])
    }
}
