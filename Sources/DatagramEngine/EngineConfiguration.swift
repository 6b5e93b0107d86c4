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
    /// buffer and is split into its datagrams. On the mmsg backend only for now (io_uring's
    /// provided buffers are sized for one datagram each; 64 KiB each would be 256 MiB).
    public var gro = true
    /// io_uring provided buffers (a power of two).
    public var uringBuffers = 4096

    public init(backend: Backend? = nil, batchSize: Int = 64, gso: Bool = true, gro: Bool = true, maxDatagramSize: Int = 2048) {
        self.backend = backend
        self.batchSize = batchSize
        self.gso = gso
        self.gro = gro
        self.maxDatagramSize = maxDatagramSize
    }
}
