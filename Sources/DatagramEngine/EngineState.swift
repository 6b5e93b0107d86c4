import Glibc

/// What the facade and its backend share, for one engine on one thread: the sockets, the
/// counters, this turn's received datagrams and the send vectors. The backend fills it, the
/// facade reads it; neither calls back into the other.
final class EngineState {
    let configuration: EngineConfiguration
    let table = SocketTable()
    var counters = EngineCounters()
    let sendVectors: SendVectors
    /// Datagrams the current turn received, and whether the waker ended its wait.
    private(set) var receivedCount = 0
    var wasWoken = false
    private let received: UnsafeMutablePointer<ReceivedDatagram>

    init(configuration: EngineConfiguration) {
        self.configuration = configuration
        received = .allocate(capacity: configuration.batchSize)
        sendVectors = SendVectors(capacity: configuration.sendCapacity)
    }

    deinit { received.deallocate() }

    /// Whether GSO may merge sends: asked for, and a batched backend.
    var gsoActive: Bool { configuration.gso && configuration.backend != .perPacket }

    var isFull: Bool { receivedCount == configuration.batchSize }

    @inline(__always)
    func received(_ index: Int) -> ReceivedDatagram { received[index] }

    func beginTurn() {
        receivedCount = 0
        wasWoken = false
    }

    /// Records one datagram the kernel delivered, whose payload, source and control messages
    /// are in place. Returns whether it joined this turn's datagrams (the bytes are then lent
    /// to the caller until the next turn); truncated or unreadable ones are counted and dropped.
    @inline(__always)
    func deliver(socket id: SocketID, slot: Int, source: Endpoint?, metadata: ReceiveMetadata,
                 truncated: Bool, payload: UnsafeRawBufferPointer) -> Bool {
        if let count = metadata.overflowCount {
            counters.kernelDrops &+= UInt64(count &- table[slot].lastOverflow)
            table[slot].lastOverflow = count
        }
        if truncated || payload.count > configuration.maxDatagramSize {
            counters.truncated &+= 1
            return false
        }
        guard let source, receivedCount < configuration.batchSize else { return false }
        received[receivedCount] = ReceivedDatagram(
            socket: id, source: source, trafficClass: TrafficClass(rawValue: metadata.trafficClass), bytes: payload)
        receivedCount += 1
        counters.datagramsIn &+= 1
        counters.bytesIn &+= UInt64(payload.count)
        counters.ecnIn[Int(metadata.trafficClass & 3)] &+= 1
        return true
    }
}
