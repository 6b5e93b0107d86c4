import Glibc
import NetAddress
import SystemSupport

/// What the facade and its backend share, for one engine on one thread: the sockets, the
/// counters, this turn's received datagrams and stream events, the send vectors and the
/// streams. The backend fills it, the facade reads it; neither calls back into the other.
@usableFromInline final class EngineState {
    let configuration: EngineConfiguration
    let table = SocketTable()
    @usableFromInline @exclusivity(unchecked) var counters = EngineCounters()
    /// The latest datagram dropped as longer than `maxDatagramSize`: two plain stores on a
    /// path that drops the datagram anyway.
    var lastTruncated: TruncatedDatagram?
    let sendVectors: SendVectors
    /// Datagrams the current turn received, and whether the waker ended its wait.
    @exclusivity(unchecked) private(set) var receivedCount = 0
    var wasWoken = false
    /// CLOCK_REALTIME less CLOCK_MONOTONIC, read at the turn's first stamped datagram (0 until
    /// then): one pair of clock reads a turn puts every receive timestamp on the monotonic clock.
    @exclusivity(unchecked) private var realtimeOffset: UInt64 = 0
    /// (@usableFromInline for the facade's inlinable `received(_:)` only.)
    @usableFromInline let received: UnsafeMutablePointer<ReceivedDatagram>
    /// Room for a full batch of GRO buffers, each split into its datagrams.
    private let receivedCapacity: Int
    /// The streams (accepted TCP connections); nil when the configuration keeps them off.
    private(set) var streams: StreamTable?
    /// This turn's stream events: accepted, data, writable, closed. Rebuilt by every receive
    /// (`StreamTable.makeEvents`), read by the owner until the next; at most
    /// `streamEventsPerTurn` of them, the rest said in later turns. Allocated once.
    let streamEvents: StreamEvents

    /// The kernel coalesces at most this many datagrams into one UDP GRO buffer.
    static let maxGROSegments = 64
    /// A UDP GRO buffer's largest size: a UDP payload can be no longer.
    static let groBufferSize = 65_536

    init(configuration: EngineConfiguration) throws(SystemCallError) {
        // The one step that can fail comes first, before anything needs undoing.
        let streamBuffers = configuration.streamLimit > 0
            ? try StreamBuffers(streams: configuration.streamLimit, inputCapacity: configuration.streamInputBytes,
                                outputCapacity: configuration.streamOutputBytes)
            : nil
        self.configuration = configuration
        receivedCapacity = configuration.batchSize * (configuration.gro ? EngineState.maxGROSegments : 1)
        received = .allocate(capacity: receivedCapacity)
        sendVectors = SendVectors(capacity: configuration.sendCapacity)
        streamEvents = StreamEvents(capacity: streamBuffers == nil ? 0 : configuration.streamEventsPerTurn)
        if let streamBuffers { streams = StreamTable(state: self, buffers: streamBuffers) }
    }

    deinit { received.deallocate() }

    /// Whether GSO may merge sends: asked for, and a batched backend.
    var gsoActive: Bool { configuration.gso && configuration.backend != .perPacket }

    /// Whether UDP GRO may coalesce receives: asked for, and a batched backend (perPacket is the
    /// one-datagram-per-call baseline). `auto` counts as batched: it is uring or mmsg.
    var groActive: Bool { configuration.gro && configuration.backend != .perPacket }

    var isFull: Bool { receivedCount >= configuration.batchSize }

    @inlinable
    func received(_ index: Int) -> ReceivedDatagram { received[index] }

    func beginTurn() {
        receivedCount = 0
        wasWoken = false
        realtimeOffset = 0
        if let streams {
            streamEvents.removeAll()
            streams.beginTurn()
        }
    }

    /// Records one datagram the kernel delivered, whose payload, source and control messages
    /// are in place; `size` is its real length, larger than the payload when it was truncated.
    /// Returns whether it joined this turn's datagrams (the bytes are then lent to the caller
    /// until the next turn); truncated or unreadable ones are counted and dropped.
    @inline(__always)
    func deliver(socket id: SocketID, slot: Int, owner: OwnerTag, source: Endpoint?, metadata: ReceiveMetadata,
                 truncated: Bool, size: Int, payload: UnsafeRawBufferPointer) -> Bool {
        if let count = metadata.overflowCount {
            counters.kernelDrops &+= UInt64(count &- table[slot].lastOverflow)
            table[slot].lastOverflow = count
        }
        let segment = metadata.segmentSize > 0 && metadata.segmentSize < payload.count ? metadata.segmentSize : payload.count
        if truncated || segment > configuration.maxDatagramSize {
            counters.truncated &+= 1
            // A datagram too long for its buffer, or a GRO buffer whose datagrams are too long.
            lastTruncated = TruncatedDatagram(size: truncated ? size : segment, sourcePort: source?.port ?? 0)
            return false
        }
        guard let source, receivedCount < receivedCapacity else { return false }
        let trafficClass = TrafficClass(rawValue: metadata.trafficClass)
        let receivedAt = metadata.timestamp == 0 ? 0 : metadata.timestamp &- monotonicOffset()
        if segment == payload.count {
            add(ReceivedDatagram(socket: id, owner: owner, source: source, trafficClass: trafficClass, bytes: payload,
                                 receivedAt: receivedAt))
            return true
        }
        // A UDP GRO buffer: datagrams of `segment` bytes back to back, the last maybe shorter,
        // all from one source with one TOS byte (the kernel coalesces only datagrams whose IP
        // headers agree but for length and id) and one receive time. Each becomes a datagram of
        // its own, in place.
        var offset = 0
        while offset < payload.count && receivedCount < receivedCapacity {
            let length = min(segment, payload.count - offset)
            add(ReceivedDatagram(socket: id, owner: owner, source: source, trafficClass: trafficClass,
                                 bytes: UnsafeRawBufferPointer(rebasing: payload[offset..<(offset + length)]),
                                 receivedAt: receivedAt))
            counters.groSegments &+= 1
            offset += length
        }
        if offset < payload.count { counters.truncated &+= 1 }
        return true
    }

    /// Takes `socket`'s datagrams of this turn away from their owner (their tag becomes
    /// `unowned`): a table that forgets a socket mid-turn, and may give its entry index to
    /// another at once, must not be handed datagrams read before. Control path: one pass over
    /// this turn's datagrams.
    func disown(_ socket: SocketID) {
        for index in 0..<receivedCount where received[index].socket == socket {
            received[index].owner = .unowned
        }
        streamEvents.disown(socket)
    }

    /// The turn's CLOCK_REALTIME less CLOCK_MONOTONIC, read once, at its first stamped datagram.
    @inline(__always)
    private func monotonicOffset() -> UInt64 {
        if realtimeOffset == 0 { realtimeOffset = MonotonicClock.realtimeOffset() }
        return realtimeOffset
    }

    @inline(__always)
    private func add(_ datagram: ReceivedDatagram) {
        received[receivedCount] = datagram
        receivedCount += 1
        counters.datagramsIn &+= 1
        counters.bytesIn &+= UInt64(datagram.bytes.count)
        counters.ecnIn[Int(datagram.trafficClass.rawValue & 3)] &+= 1
    }
}
