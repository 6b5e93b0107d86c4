import DatagramEngine

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
    /// Relayed datagrams (ChannelData, Data indications, over TLS as records) a connection's
    /// output may hold: past it they are dropped and counted (`client_backpressure`). A burst
    /// this large, a video keyframe of 200 datagrams of 1,200 bytes with their framing, reaches
    /// a client that reads even when it all arrives in one turn.
    public static let relayedOutputBytes = 256 << 10
    /// Engine output per connection: the relayed datagrams' bound and room for answers behind
    /// them, so a client whose output is full of media still gets its Refresh answered.
    public static let outputBytes = relayedOutputBytes + (16 << 10)
    /// Output a connection without an allocation may hold: answers only, so a client reading
    /// them has plenty, while one that pipelines requests without reading stops being read
    /// here, and an unauthenticated connection costs the relay no more than this and its input.
    public static let outputBeforeAllocation = 32 << 10
    /// How much longer than its request an answer can be: REALM, NONCE, a reason phrase (763
    /// bytes at most each), addresses, integrity and fingerprint, and a 420's list of unknown
    /// attributes, which is shorter than the attributes it names. A request is handled only
    /// when the output has room for this much more than its length; otherwise the
    /// connection's input waits (backpressure) until the client reads, so no answer is lost.
    public static let answerAllowance = 4 << 10
    /// SO_SNDBUF of a connection; the kernel doubles it, so a client that does not read pins
    /// at most `outputBytes` in the relay and twice this in the kernel. A client that reads
    /// gets at most about that much in flight: 8 Mbit/s at 100 ms of round trip.
    public static let sendBufferBytes = 64 << 10
    /// SO_RCVBUF of a connection, likewise doubled: what a client sends while the relay does
    /// not read it (it waits for room to answer) waits in at most this much kernel memory, where
    /// autotuning would grow it to megabytes after a fast upload. It bounds a client's upload
    /// to about 10 Mbit/s at 100 ms of round trip.
    public static let receiveBufferBytes = 128 << 10

    public init() {}

    /// Sets up `engine`'s streams for TURN connections: `maxConnections` of them (SO_REUSEPORT
    /// may hand every one to the same worker), each with the buffers above.
    public static func configure(_ engine: inout EngineConfiguration, maxConnections: Int) {
        engine.streamLimit = maxConnections
        engine.streamInputBytes = inputBytes
        engine.streamOutputBytes = outputBytes
        engine.streamHighWater = outputBytes
        engine.streamSendBufferBytes = sendBufferBytes
        engine.streamReceiveBufferBytes = receiveBufferBytes
    }
}
