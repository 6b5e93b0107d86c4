/// Bounds on TURN clients over TCP and TLS, fixed for the relay's lifetime. A connection costs
/// the relay a descriptor, buffers in the engine (set up at accept, bounded) and, over TLS, a
/// TLS session: these limits keep many slow or idle connections from taking what UDP TURN,
/// sessions and the control port need.
public struct TurnStreamLimits: Sendable, Equatable {
    /// Connections open at once, over every transport and worker (--turn-max-connections).
    /// Each worker's engine reserves room for this many, since SO_REUSEPORT may send them all
    /// to one worker.
    public var maxConnections = 10_000
    /// Connections from one IP address at once (--turn-max-connections-per-source): one
    /// address cannot take the whole relay. High enough for an office behind one NAT.
    public var maxPerSource = 500
    /// A TLS handshake must finish within this, and the first STUN message or ChannelData of a
    /// connection arrive within this after connecting (or after the handshake).
    public var handshakeNanoseconds: UInt64 = 10_000_000_000
    public var firstMessageNanoseconds: UInt64 = 10_000_000_000
    /// A connection without an allocation closes after this long without a message; one with
    /// an allocation lives as long as the allocation does, and closes with it.
    public var idleNanoseconds: UInt64 = 60_000_000_000
    /// TLS handshake steps a worker takes per turn; the rest wait for the next turn, so a wave
    /// of connecting clients (a signature each: about a millisecond with RSA 2048) cannot hold
    /// up the datagrams for long. 32 keeps a turn's signing near 30 ms.
    public var handshakesPerTurn = 32
    /// The longest STUN message or ChannelData a stream may carry: what its 16-bit length
    /// allows (RFC 8656 section 12.5), header included.
    public static let maxMessage = 65_535 + 20
    /// Engine input per connection: the longest message with ChannelData's padding, rounded up.
    public static let inputBytes = 66 << 10

    public init() {}
}
