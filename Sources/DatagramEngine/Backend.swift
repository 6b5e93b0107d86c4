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
    /// io_uring provided buffers (a power of two).
    public var uringBuffers = 4096

    public init(backend: BackendChoice = .auto, batchSize: Int = 64, gso: Bool = true, maxDatagramSize: Int = 2048) {
        self.backend = backend
        self.batchSize = batchSize
        self.gso = gso
        self.maxDatagramSize = maxDatagramSize
    }
}
