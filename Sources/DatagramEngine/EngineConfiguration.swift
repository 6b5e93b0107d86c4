/// How an engine is set up. Everything is sized here, once: the packet path allocates nothing.
public struct EngineConfiguration: Sendable {
    /// The backend asked for; nil means auto: io_uring when the kernel allows it, else mmsg.
    public var backend: Backend?
    /// Datagrams taken per receive turn, at most.
    public var batchSize = 64
    /// Datagrams queued for sending before a flush is forced.
    public var sendCapacity = 1024
    /// The largest datagram accepted: the size of each receive buffer (recvmsg vectors and
    /// io_uring provided buffers alike); longer ones are counted as truncated and dropped.
    public var maxDatagramSize = 2048
    /// UDP GSO on the batched backends (never on perPacket, which is the no-batching baseline).
    public var gso = true
    /// UDP GRO on receive, where the kernel takes UDP_GRO: a burst of one flow arrives as one
    /// buffer and is split into its datagrams. On the batched backends (never on perPacket).
    /// Every receive buffer must then hold a whole burst, 64 KiB: see `receiveBufferBytes`.
    public var gro = true
    /// The kernel's receive timestamp on every datagram socket (SO_TIMESTAMPNS), as each
    /// datagram's `receivedAt`: how long it waited in its socket's queue, for marking by sojourn.
    /// Off, `receivedAt` is 0. Its cost is measured in bench/README.md ("Receive timestamps").
    /// When no other socket on the host has stamps on, the kernel turns them on a moment later
    /// (a deferred work item); a datagram that arrives before is stamped when it is read and
    /// shows no wait, so marking by sojourn starts a few milliseconds after the first socket.
    public var receiveTimestamps = false
    /// io_uring provided buffers wanted (a power of two); see `uringBufferCount`.
    public var uringBuffers = 4096
    /// At most this many bytes of io_uring provided buffers per engine: large datagram sizes
    /// get fewer buffers rather than hundreds of MiB per worker.
    public var uringBufferBytes = 32 << 20

    /// Streams (TCP connections accepted on registered listeners): at most this many open at
    /// once per engine. 0, the default, keeps streams off: nothing is reserved for them and
    /// `listen` is refused. Connections accepted past the limit are reset at once (counted).
    public var streamLimit = 0
    /// Each stream's input buffer: bytes received and not yet consumed by the owner. When it is
    /// full the engine stops reading that connection (backpressure) until the owner consumes.
    /// It must hold the largest message the owner's framer waits for whole.
    public var streamInputBytes = 16 << 10
    /// Each stream's output ring: bytes written and not yet taken by the kernel.
    public var streamOutputBytes = 64 << 10
    /// SO_SNDBUF of every accepted stream (the kernel doubles it for its bookkeeping and
    /// holds at most that much of the stream's output, sent or not yet acknowledged), so what
    /// a peer that does not read pins is this ring plus a known kernel buffer; 0 leaves the
    /// kernel's autotuning (tcp_wmem), which lets megabytes wait per connection.
    public var streamSendBufferBytes = 0
    /// SO_RCVBUF of every accepted stream, likewise: what a peer may have waiting in the
    /// kernel while its owner does not read it (a full input, or an owner waiting for room to
    /// answer); 0 leaves the kernel's autotuning (tcp_rmem), which grows with a fast sender.
    public var streamReceiveBufferBytes = 0
    /// A `write` that would leave more than this many bytes pending is refused (the caller
    /// drops the message and counts it); at most `streamOutputBytes`.
    public var streamHighWater = 64 << 10
    /// A stream whose writes were refused is reported `writable` once its pending output falls
    /// below this many bytes.
    public var streamLowWater = 16 << 10
    /// Bytes read from one connection per turn, at most: a fast sender cannot fill the turn.
    public var streamReadBudget = 16 << 10
    /// `accepted` events per turn, at most (the rest wait for the next turns), so that a storm
    /// of connections cannot crowd out the datagrams.
    public var acceptsPerTurn = 64
    /// Stream events one turn reports, at most; what does not fit waits for the next turn.
    public var streamEventsPerTurn = 1024
    /// How long an owner's `close` may spend sending pending output to a peer that does not
    /// read, when the stream has no deadline of its own.
    public var closeLingerMilliseconds = 5_000

    public init(backend: Backend? = nil, batchSize: Int = 64, gso: Bool = true, gro: Bool = true, maxDatagramSize: Int = 2048,
                receiveTimestamps: Bool = false) {
        self.backend = backend
        self.batchSize = batchSize
        self.gso = gso
        self.gro = gro
        self.maxDatagramSize = maxDatagramSize
        self.receiveTimestamps = receiveTimestamps
    }

    /// The bytes of one io_uring provided buffer: the recvmsg header, source address and control
    /// space, then the payload, rounded up so that every buffer's header stays aligned.
    /// With GRO a buffer takes a whole coalesced burst (64 KiB), so the budget below leaves
    /// fewer of them: 256 rather than 4096 (16 MiB per worker; 4096 would be 256 MiB). When they
    /// are all full the multishot receives end and are re-armed (receiveRestarts), and the
    /// datagrams wait in the socket's queue meanwhile, none lost.
    public var uringBufferSize: Int {
        (Ring.headerLength + (gro ? max(EngineState.groBufferSize, maxDatagramSize) : maxDatagramSize) + 63) & ~63
    }

    /// io_uring provided buffers actually used: `uringBuffers`, halved while they would hold
    /// more than `uringBufferBytes`, but never fewer than two receive batches (a power of two,
    /// as the kernel's buffer ring needs).
    public var uringBufferCount: Int {
        var floor = 1
        while floor < batchSize * 2 { floor <<= 1 }
        var count = 1
        while count < uringBuffers { count <<= 1 }
        while count > floor && count * uringBufferSize > uringBufferBytes { count >>= 1 }
        return min(max(count, floor), 32768)
    }

    /// The bytes of receive buffers one engine (one relay worker) holds for datagrams with
    /// `backend`: io_uring's provided buffers, or one batch of recvmsg vectors (64 KiB each on
    /// mmsg with GRO, which hands over a whole burst of a flow at once). Sends borrow the
    /// received bytes, so this is all of it.
    public func receiveBufferBytes(_ backend: Backend) -> Int {
        switch backend {
        case .uring: uringBufferCount * uringBufferSize
        case .mmsg where gro: batchSize * max(EngineState.groBufferSize, maxDatagramSize)
        default: batchSize * maxDatagramSize
        }
    }
}
