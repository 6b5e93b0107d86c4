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
    /// io_uring provided buffers wanted (a power of two); see `uringBufferCount`.
    public var uringBuffers = 4096
    /// At most this many bytes of io_uring provided buffers per engine: large datagram sizes
    /// get fewer buffers rather than hundreds of MiB per worker.
    public var uringBufferBytes = 32 << 20

    public init(backend: Backend? = nil, batchSize: Int = 64, gso: Bool = true, maxDatagramSize: Int = 2048) {
        self.backend = backend
        self.batchSize = batchSize
        self.gso = gso
        self.maxDatagramSize = maxDatagramSize
    }

    /// The bytes of one io_uring provided buffer: the recvmsg header, source address and control
    /// space, then the payload, rounded up so that every buffer's header stays aligned.
    public var uringBufferSize: Int { (Ring.headerLength + maxDatagramSize + 63) & ~63 }

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
    /// `backend`: io_uring's provided buffers, or one batch of recvmsg vectors. Sends borrow
    /// the received bytes, so this is all of it.
    public func receiveBufferBytes(_ backend: Backend) -> Int {
        backend == .uring ? uringBufferCount * uringBufferSize : batchSize * maxDatagramSize
    }
}
