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
    /// Every receive buffer is then 64 KiB: mmsg has `batchSize` of them (4 MiB at batch 64),
    /// io_uring `uringGROBuffers` instead of `uringBuffers` (8 MiB at batch 64, about what
    /// 4096 buffers of 2 KiB take without GRO).
    public var gro = true
    /// io_uring provided buffers (a power of two) of `maxDatagramSize` each, without GRO.
    public var uringBuffers = 4096

    /// io_uring provided buffers with GRO, 64 KiB each: one batch lent to the turn's sends and
    /// one for the kernel to fill meanwhile (4096 of them would be 256 MiB). When all are full
    /// the multishot receives end and are re-armed (counted in receiveRestarts); nothing is lost,
    /// the datagrams wait in the socket's queue.
    public var uringGROBuffers: Int {
        var count = 1
        while count < batchSize * 2 { count <<= 1 }
        return count
    }

    public init(backend: Backend? = nil, batchSize: Int = 64, gso: Bool = true, gro: Bool = true, maxDatagramSize: Int = 2048) {
        self.backend = backend
        self.batchSize = batchSize
        self.gso = gso
        self.gro = gro
        self.maxDatagramSize = maxDatagramSize
    }
}
