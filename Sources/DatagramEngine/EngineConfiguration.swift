/// Which system calls move the datagrams.
public enum Backend: String, Sendable, CaseIterable {
    /// One recvmsg and one sendmsg per datagram: the baseline batching is measured against.
    case perPacket = "perpacket"
    /// recvmmsg / sendmmsg over preallocated vectors.
    case mmsg
    /// io_uring: multishot receive over a provided-buffer ring, every send of a flush in one submit.
    case uring
}

/// The backend asked for: one of them, or `auto` (io_uring when the kernel allows it, else mmsg).
public enum BackendChoice: String, Sendable, CaseIterable {
    case auto
    case perPacket = "perpacket"
    case mmsg
    case uring
}

/// How an engine is set up. Everything is sized here, once: the packet path allocates nothing.
public struct EngineConfiguration: Sendable {
    public var backend: BackendChoice = .auto
    /// Datagrams taken per receive turn, at most.
    public var batchSize = 64
    /// Datagrams queued for sending before a flush is forced.
    public var sendCapacity = 1024
    /// The largest datagram accepted; longer ones are counted as truncated and dropped.
    public var maxDatagramSize = 2048
    /// UDP GSO on the batched backends (never on perPacket, which is the no-batching baseline).
    public var gso = true
    /// io_uring provided buffers wanted (a power of two); see `uringBufferCount`.
    public var uringBuffers = 4096
    /// At most this many bytes of io_uring provided buffers per engine: large datagram sizes
    /// get fewer buffers rather than hundreds of MiB per worker.
    public var uringBufferBytes = 32 << 20

    public init(backend: BackendChoice = .auto, batchSize: Int = 64, gso: Bool = true, maxDatagramSize: Int = 2048) {
        self.backend = backend
        self.batchSize = batchSize
        self.gso = gso
        self.maxDatagramSize = maxDatagramSize
    }

    /// The bytes of one io_uring provided buffer: the recvmsg header, source address and control
    /// space, then the payload, rounded up so that every buffer's header stays aligned.
    public var uringBufferSize: Int { (URingDriver.headerLength + maxDatagramSize + 63) & ~63 }

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
