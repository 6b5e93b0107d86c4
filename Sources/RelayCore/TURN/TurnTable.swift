import DatagramEngine
import NetAddress
import STUN

/// The TURN server of one worker (RFC 8656 over UDP, TCP and TLS): what the worker drives.
/// It hands each message to the part whose job it is and runs what spans parts (an
/// allocation's end, housekeeping, stats); the state lives in the parts:
/// - `AllocationStore`: allocations, permissions, channels and when each ends;
/// - `TurnRequests`: Allocate, Refresh, CreatePermission, ChannelBind and Binding, their
///   authentication and answers;
/// - `TurnPacketPath`: ChannelData and indications both ways, allocation-free;
/// - `TurnStreamClients`: clients over TCP and TLS, their connections and framing;
/// - `RelayedSockets`: the allocations' relayed sockets and their ports.
/// The clients of this worker are those whose 5-tuples reach its listeners (SO_REUSEPORT keeps
/// a 5-tuple on one worker). Only its worker's thread touches it: no locks. Generic over the
/// engine it asks (`TableEngine`): `DatagramEngine` in production, in memory in tests.
final class TurnTable<Engine: TableEngine> {
    let engine: Engine
    let settings: TurnSettings
    let shared: TurnSharedState
    /// The worker's time this turn (`WorkerClock`: one source for every table).
    let clock: WorkerClock
    let store: AllocationStore
    let relayedSockets: RelayedSockets<Engine>
    let streams: TurnStreamClients<Engine>
    let packets: TurnPacketPath<Engine>
    let requests: TurnRequests<Engine>
    /// Framing and answers written by the parts, sent at the flush (`flushed` resets it).
    let arena: OutgoingArena<Engine>
    /// What the table itself counts: messages it could not hand to a part, allocations it
    /// ended for a closed connection or for their lifetime.
    @exclusivity(unchecked) private var ownCounters = TurnCounters()
    /// Where the record of each allocation that ends goes; nil: none.
    var accounting: AccountingSink?
    /// The kernel fast path (`TurnTable+Offload`); nil: none.
    let offload: (any FlowOffload)?
    /// The channels the kernel carries, by allocation index and channel number.
    var offloadedChannels: [Int: [UInt16: OffloadedChannel]] = [:]
    /// The ends each allocation's offloaded channels share (TurnTable+Offload).
    var channelEnds: [Int: ChannelEnds] = [:]
    /// The allocations among them forwarded on credit.
    var creditedAllocations: Set<Int> = []
    /// Each UDP listener's bound address, by its socket's slot (for the kernel's exact keys).
    var listenerAddresses: [Int32: Endpoint] = [:]

    init(engine: Engine, settings: TurnSettings, shared: TurnSharedState, ports: PortPool,
         socketOptions: SocketOptions = SocketOptions(), clock: WorkerClock, egress: EgressShare = EgressShare(nil),
         offload: (any FlowOffload)? = nil) {
        self.engine = engine
        self.offload = offload
        self.settings = settings
        self.shared = shared
        self.clock = clock
        // A whole receive batch of the largest datagrams with their framing, so the arena
        // fills before a batch ends only when datagrams are unusually large.
        arena = OutgoingArena(capacity: max(256 << 10, engine.configuration.batchSize * (engine.configuration.maxDatagramSize + 64)),
                              engine: engine)
        store = AllocationStore()
        relayedSockets = RelayedSockets(engine: engine, settings: settings, shared: shared, ports: ports, socketOptions: socketOptions,
                                        clock: clock)
        streams = TurnStreamClients(engine: engine, settings: settings, shared: shared, arena: arena, clock: clock)
        packets = TurnPacketPath(engine: engine, settings: settings, shared: shared, store: store, streams: streams, arena: arena,
                                 clock: clock, egress: egress)
        requests = TurnRequests(engine: engine, settings: settings, shared: shared, store: store, relayedSockets: relayedSockets,
                                streams: streams, arena: arena, clock: clock)
        streams.attach(to: self)
        requests.attach(to: self)
    }

    /// The owner flushed the engine: every slice of the arena has been sent, sockets of
    /// allocations removed during the batch can close, and connections whose allocations
    /// ended (their answers queued) close.
    func flushed() {
        arena.reset()
        relayedSockets.closePending()
        streams.flushed()
    }

    /// A datagram on a listener: ChannelData, a Send indication or a request.
    @inline(__always)
    func fromClient(_ datagram: ReceivedDatagram) {
        fromClient(TurnClient(socket: datagram.socket, address: datagram.source, localAddress: datagram.localAddress),
                   datagram.bytes, datagram.trafficClass, receivedAt: datagram.receivedAt)
    }

    /// One message from `client`, a datagram or one cut from its stream (`TurnStreamClients`):
    /// ChannelData, a Send indication or a request. `received` is the IP header's traffic class
    /// of a datagram; a message from a stream has none of its own (RFC 8656 section 15: the
    /// relay sends it on with its default DSCP and Not-ECT), so it comes as zero, and with no
    /// receive time (`receivedAt` 0: never marked for backlog, being Not-ECT anyway).
    @inline(__always)
    func fromClient(_ client: TurnClient, _ bytes: UnsafeRawBufferPointer, _ received: TrafficClass, receivedAt: UInt64) {
        // Indexed, not `.first`: the generic Collection accessor allocates in debug builds.
        guard bytes.count > 0 else { return ownCounters.add(.malformed) }
        let first = bytes[0]
        if ChannelData.isChannelData(first) {
            packets.channelData(client, bytes, received, receivedAt: receivedAt)
        } else if first & 0xC0 == 0 {
            stun(client, bytes, received, receivedAt: receivedAt)
        } else {
            ownCounters.add(.malformed)
        }
    }

    private func stun(_ client: TurnClient, _ bytes: UnsafeRawBufferPointer, _ received: TrafficClass, receivedAt: UInt64) {
        let index: AttributeIndex
        do {
            index = try AttributeIndex(parsing: bytes)
        } catch {
            return ownCounters.add(.malformed)
        }
        switch index.type.messageClass {
        case .indication where index.type.method == .send:
            packets.sendIndication(client, index, bytes, received, receivedAt: receivedAt)
        case .request: requests.request(client, index, bytes)
        default: break  // other indications and responses: a server ignores them
        }
    }

    /// A datagram from a peer to a relayed socket of `allocation` (its owner tag's index).
    @inline(__always)
    func fromPeer(_ allocation: Int, _ datagram: ReceivedDatagram) {
        packets.fromPeer(allocation, datagram.source, datagram.bytes, datagram.trafficClass, receivedAt: datagram.receivedAt)
    }

    /// A datagram of `bytes` from `peer` to a relayed socket of `allocation`, with its traffic
    /// class and receive time (0: unknown).
    @inline(__always)
    func fromPeer(_ allocation: Int, _ peer: Endpoint, _ bytes: UnsafeRawBufferPointer, _ received: TrafficClass, receivedAt: UInt64) {
        packets.fromPeer(allocation, peer, bytes, received, receivedAt: receivedAt)
    }

    /// A connection accepted on the TURN stream listener tagged `listener`.
    func accepted(_ stream: SocketID, peer: Endpoint, listener: OwnerTag) {
        streams.accepted(stream, peer: peer, transport: listener.turnStreamTransport)
    }

    /// An event of the stream client on `connection` (its owner tag's index).
    func streamEvent(_ connection: Int, _ kind: StreamEvent.Kind) {
        streams.handle(kind, on: connection)
    }

    /// A new turn's stream work (TLS handshakes put off last turn first).
    func beginStreamTurn() { streams.beginTurn() }

    /// Whether handshakes wait for the next turn (which must then not sleep).
    var hasDeferredStreamWork: Bool { streams.hasDeferredWork }

    /// Ends the allocation at `index` at once: its record goes to `accounting`, its sockets
    /// route nowhere from now on and close after the flush (a Refresh that deletes arrives in
    /// the middle of a batch whose datagrams may still be queued on them), its user's quota
    /// is released, and a stream client's connection closes after the flush.
    func removeAllocation(_ index: Int, _ reason: EndReason) {
        if offload != nil { takeOffloaded(index) }
        guard let allocation = store.remove(index) else { return }
        accounting?(allocation.accountingRecord(reason, now: clock.now))
        for relay in [allocation.relay4, allocation.relay6].compactMap({ $0 }) { relayedSockets.retire(relay) }
        shared.release(allocation.username)
        if allocation.client.isStream { streams.allocationEnded(on: allocation.client.connectionIndex) }
    }

    /// `client`'s connection closed: its allocation, if it has one, ends with it.
    func endAllocation(of client: TurnClient) {
        guard let index = store.index(of: client) else { return }
        removeAllocation(index, .connectionClosed)
        ownCounters.allocationsDeleted &+= 1
    }

    /// Housekeeping against the turn's time: allocations past their lifetime close,
    /// permissions and channels past theirs are forgotten (`AllocationStore.nextEnded`),
    /// unclaimed port reservations return to the pool.
    func expire() {
        let now = clock.now
        while let index = store.nextEnded(now: now) {
            removeAllocation(index, .expired)
            ownCounters.allocationsExpired &+= 1
        }
        if !offloadedChannels.isEmpty { takeExpiredOffloads(now: now) }
        relayedSockets.closePending()
        relayedSockets.expireReservations(now: now)
    }

    /// Closes every connection and allocation (the worker is stopping).
    func shutDown() {
        // Connections first: their entries gone, removing their allocations queues no close.
        streams.closeAll()
        for index in store.liveIndices { removeAllocation(index, .shutdown) }
        relayedSockets.closePending()
    }

    /// Every part's counters, summed (for stats; nothing here allocates).
    var counters: TurnCounters {
        var total = ownCounters
        total.merge(packets.counters)
        total.merge(requests.counters)
        return total
    }

    var transportCounters: TransportCounters {
        var total = streams.transportCounters
        total.merge(packets.transportCounters)
        total.allocations.add(requests.allocationsByTransport)
        return total
    }

    var stats: TurnStats {
        var stats = TurnStats()
        stats.counters = counters
        stats.allocations = store.count
        stats.permissions = store.permissionCount
        stats.channels = store.channelCount
        stats.transports = transportCounters
        stats.openConnections = streams.openConnections
        return stats
    }

    var activeAllocations: Int { store.count }
    var activePermissions: Int { store.permissionCount }
    var activeChannels: Int { store.channelCount }

    /// Up to `limit` allocations, oldest first (GET /v1/turn/allocations).
    func describeAllocations(limit: Int, worker: Int) -> [TurnAllocationInfo] {
        store.describe(limit: limit, worker: worker, now: clock.now, counters: offload == nil ? nil : countersWithKernel)
    }

    /// Whether TLS sessions ended since the last call: the worker then gives freed heap back.
    func takeEndedTLSSessions() -> Bool { streams.takeEndedTLSSessions() }
}
