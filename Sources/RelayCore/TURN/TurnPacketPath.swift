import DatagramEngine
import NetAddress
import STUN

/// TURN's packet path on one worker (RFC 8656 sections 11 and 12): ChannelData and Send
/// indications from clients to peers, and peers' datagrams back to clients as ChannelData or
/// Data indications, with the marking policy, the allocation's quota, the worker's backlog and
/// the egress cap applied on the way. Allocates nothing: client-to-peer payloads are sent
/// from the received buffer, peer-to-client framing is written into the `OutgoingArena`.
///
/// Contract: called by its `TurnTable` only, on the worker's thread, with an allocation index
/// from the `AllocationStore` (a peer's datagram carries it in its socket's owner tag). Every
/// method reads the turn's time once and hands it down.
final class TurnPacketPath<Engine: TableEngine> {
    private let engine: Engine
    private let settings: TurnSettings
    private let shared: TurnSharedState
    private let store: AllocationStore
    private let streams: TurnStreamClients<Engine>
    private let arena: OutgoingArena<Engine>
    private let clock: WorkerClock
    /// This worker's share of the egress cap (shared with its other tables).
    let egress: EgressShare
    // Read and written per datagram by the worker's thread only, no access overlapping
    // another: the dynamic exclusivity checks buy nothing here.
    /// What the packet path relayed and dropped; the table sums its parts' counters.
    @exclusivity(unchecked) private(set) var counters = TurnCounters()
    /// Datagrams and bytes relayed per transport of the allocation's client.
    @exclusivity(unchecked) private(set) var transportCounters = TransportCounters()
    @exclusivity(unchecked) private var random = MarkingRandom()
    /// Data indications need a transaction id; a counter from a random start is unique enough.
    @exclusivity(unchecked) private var indicationID = TransactionID.random()

    init(engine: Engine, settings: TurnSettings, shared: TurnSharedState, store: AllocationStore, streams: TurnStreamClients<Engine>,
         arena: OutgoingArena<Engine>, clock: WorkerClock, egress: EgressShare) {
        self.engine = engine
        self.settings = settings
        self.shared = shared
        self.store = store
        self.streams = streams
        self.arena = arena
        self.clock = clock
        self.egress = egress
    }

    /// ChannelData from a client: the channel's entry says where to and whether its permission
    /// still holds, so past the client's allocation this is one lookup.
    @inline(__always)
    func channelData(_ client: TurnClient, _ bytes: UnsafeRawBufferPointer, _ received: TrafficClass, receivedAt: UInt64) {
        guard let (channel, length) = ChannelData.parse(bytes) else { return counters.add(.malformed) }
        guard let allocation = store.indexCachingLast(of: client) else { return counters.add(.noAllocation) }
        let now = clock.now
        guard let binding = store[allocation].channels.binding(number: channel), binding.expires > now else {
            return counters.add(.noChannel)
        }
        guard binding.permissionExpires > now else { return refused(allocation, .noPermission) }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[ChannelData.headerSize..<(ChannelData.headerSize + length)])
        guard toPeer(allocation, binding.peer, payload, received, receivedAt: receivedAt, now: now) else { return }
        store[allocation].counters.channelDataIn &+= 1
        counters.channelDataToPeers &+= 1
    }

    /// A Send indication: its DATA goes to its XOR-PEER-ADDRESS if permitted. Never answered.
    @inline(__always)
    func sendIndication(_ client: TurnClient, _ index: AttributeIndex, _ bytes: UnsafeRawBufferPointer, _ received: TrafficClass,
                        receivedAt: UInt64) {
        guard let allocation = store.indexCachingLast(of: client) else { return counters.add(.noAllocation) }
        guard let peerSlot = index.first(.xorPeerAddress), let dataSlot = index.first(.data),
              let peer = XORAddress.decode(bytes.attributeValue(peerSlot), index.transactionID) else {
            return counters.add(.malformed)
        }
        // A permission is per address; the port of each Send is checked too, so no Send
        // reaches one of the relay's own sockets on a permitted address.
        let relayed = shared.relayedPorts
        if case .refused(let reason) = settings.peerPolicy.decide(peer: peer, isRelayedAddress: { relayed.contains($0) }) {
            counters.add(reason)
            return counters.add(.forbiddenPeer)
        }
        let now = clock.now
        guard store[allocation].permits(peer, now: now) else { return refused(allocation, .noPermission) }
        guard toPeer(allocation, peer, bytes.attributeValue(dataSlot), received, receivedAt: receivedAt, now: now) else { return }
        store[allocation].counters.indicationsIn &+= 1
        counters.indicationsToPeers &+= 1
    }

    /// Sends `payload` from the allocation's relayed socket to `peer` (whose permission the
    /// caller has checked) when the bandwidth quota has room; counts the drop otherwise.
    /// `receivedAt` is the datagram's receive time (0: unknown), for marking by backlog.
    @inline(__always)
    private func toPeer(_ allocation: Int, _ peer: Endpoint, _ payload: UnsafeRawBufferPointer, _ received: TrafficClass,
                        receivedAt: UInt64, now: UInt64) -> Bool {
        guard let relay = store[allocation].relay(for: peer) else {
            refused(allocation, .noPermission)
            return false
        }
        // Channels and permissions are checked once, when made; a relayed port they named may
        // since have gone back to the pool.
        guard !settings.peerPolicy.isStaleRelayedPeer(peer, relayed: shared.relayedPorts) else {
            refused(allocation, .staleRelayedPeer)
            return false
        }
        var marking = settings.marking.apply(received)
        guard policed(allocation, payload.count, &marking, now: now) else { return false }
        markBacklog(allocation, receivedAt, &marking, now: now)
        guard egressAdmits(allocation, payload.count, &marking, now: now) else { return false }
        engine.enqueue(socket: relay.socket, to: peer, trafficClass: marking, bytes: payload)
        store[allocation].counters.ecnFromClient[Int(received.ecn.rawValue)] &+= 1
        store[allocation].counters.ecnToPeers[Int(marking.ecn.rawValue)] &+= 1
        store[allocation].counters.bytesToPeers &+= UInt64(payload.count)
        counters.bytesToPeers &+= UInt64(payload.count)
        let transport = store[allocation].transport.rawValue
        transportCounters.datagramsToPeers[transport] &+= 1
        transportCounters.bytesToPeers[transport] &+= UInt64(payload.count)
        return true
    }

    /// A datagram from a peer to a relayed socket of `allocation` (the index its socket's
    /// owner tag carries): to the client as ChannelData when the peer has a channel, as a Data
    /// indication otherwise; dropped without a permission. A peer with a channel costs one
    /// lookup (the channel carries its permission's expiry), one without costs two.
    @inline(__always)
    func fromPeer(_ allocation: Int, _ peer: Endpoint, _ payload: UnsafeRawBufferPointer, _ received: TrafficClass, receivedAt: UInt64) {
        let now = clock.now
        let binding = store[allocation].channels.binding(peer: peer)
        let permitted = if let binding { binding.permissionExpires > now } else { store[allocation].permits(peer, now: now) }
        guard permitted else { return refused(allocation, .noPermission) }
        var marking = settings.marking.apply(received)
        guard policed(allocation, payload.count, &marking, now: now) else { return }
        markBacklog(allocation, receivedAt, &marking, now: now)
        let client = store[allocation].client
        let channel = binding.flatMap { $0.expires > now ? $0.number : nil }
        // The egress cap counts what goes on the wire: the payload with its framing. Over a
        // stream ChannelData is padded to a multiple of 4 (RFC 8656 section 12.5).
        let size = channel != nil ? ChannelData.headerSize + (client.isStream ? (payload.count + 3) & ~3 : payload.count)
            : DataIndication.overhead(for: peer) + (payload.count + 3) & ~3
        guard egressAdmits(allocation, size, &marking, now: now) else { return }
        let framed: UnsafeMutableRawBufferPointer
        if let channel {
            guard let out = arena.room(size) else { return counters.add(.tooLarge) }
            ChannelData.writeHeader(channel: channel, length: payload.count, to: out, at: 0)
            if payload.count > 0 { (out.baseAddress! + ChannelData.headerSize).copyMemory(from: payload.baseAddress!, byteCount: payload.count) }
            let end = ChannelData.headerSize + payload.count
            if size > end { (out.baseAddress! + end).initializeMemory(as: UInt8.self, repeating: 0, count: size - end) }
            framed = out
            store[allocation].counters.channelDataOut &+= 1
            counters.channelDataToClients &+= 1
        } else {
            guard let out = arena.room(size) else { return counters.add(.tooLarge) }
            indicationID.low &+= 1
            let written = DataIndication.write(peer: peer, payload: payload, id: indicationID, to: out, at: 0)
            guard written > 0 else { return counters.add(.tooLarge) }
            framed = UnsafeMutableRawBufferPointer(rebasing: out[0..<written])
            store[allocation].counters.indicationsOut &+= 1
            counters.indicationsToClients &+= 1
        }
        if client.isStream {
            guard streams.send(UnsafeRawBufferPointer(framed), to: client) else { return refused(allocation, .clientBackpressure) }
        } else {
            engine.enqueue(socket: client.socket, to: client.address, from: client.localAddress, trafficClass: marking,
                           bytes: UnsafeRawBufferPointer(framed))
        }
        store[allocation].counters.ecnFromPeers[Int(received.ecn.rawValue)] &+= 1
        store[allocation].counters.ecnToClient[Int(marking.ecn.rawValue)] &+= 1
        store[allocation].counters.bytesToClient &+= UInt64(payload.count)
        counters.bytesToClients &+= UInt64(payload.count)
        let transport = store[allocation].transport.rawValue
        transportCounters.datagramsToClients[transport] &+= 1
        transportCounters.bytesToClients[transport] &+= UInt64(payload.count)
    }

    /// The allocation's bandwidth quota (`Policer`: one second of burst, both directions
    /// together) for `bytes` leaving with `marking`: false when it drops them (counted); CE in
    /// `marking` when it marks them.
    @inline(__always)
    private func policed(_ allocation: Int, _ bytes: Int, _ marking: inout TrafficClass, now: UInt64) -> Bool {
        guard store[allocation].bandwidth.isLimited else { return true }
        let marks = store[allocation].ecnMarking
        switch store[allocation].bandwidth.police(UInt64(bytes), marking.ecn, now: now, marks: marks,
                                                  thresholds: settings.ecnThresholds, random: &random) {
        case .pass: return true
        case .mark:
            marking = marking.markedCE
            countCEMark(allocation, .rateLimit)
            return true
        case .drop:
            refused(allocation, .bandwidth)
            return false
        }
    }

    /// The egress cap for `bytes` of `allocation` leaving with `marking`, as `policed`.
    @inline(__always)
    private func egressAdmits(_ allocation: Int, _ bytes: Int, _ marking: inout TrafficClass, now: UInt64) -> Bool {
        guard egress.isOn else { return true }
        switch egress.police(bytes, marking.ecn, now: now, marks: store[allocation].ecnMarking,
                             thresholds: settings.ecnThresholds, random: &random) {
        case .pass: return true
        case .mark:
            marking = marking.markedCE
            countCEMark(allocation, .egress)
            return true
        case .drop:
            refused(allocation, .egress)
            return false
        }
    }

    /// CE in `marking` when the datagram, received at `receivedAt`, waited in its socket's queue
    /// past the backlog threshold of its codepoint (`BacklogThresholds`). After the quota (which
    /// may have marked it already), before the egress cap.
    @inline(__always)
    private func markBacklog(_ allocation: Int, _ receivedAt: UInt64, _ marking: inout TrafficClass, now: UInt64) {
        guard settings.backlogThresholds.marks(marking.ecn, receivedAt: receivedAt, now: now), store[allocation].ecnMarking else { return }
        marking = marking.markedCE
        countCEMark(allocation, .backlog)
    }

    /// Counts a CE mark the relay set on a datagram of `allocation`, for it and by cause.
    @inline(__always)
    private func countCEMark(_ allocation: Int, _ cause: CEMarkCause) {
        store[allocation].counters.ceMarked.add(cause)
        counters.ceMarks.add(cause)
    }

    /// A datagram of `allocation` not relayed, counted for the allocation and by reason.
    @inline(__always)
    private func refused(_ allocation: Int, _ reason: TurnDropReason) {
        store[allocation].counters.drops[reason.rawValue] &+= 1
        counters.add(reason)
    }
}

extension UnsafeRawBufferPointer {
    /// The value of the attribute in `slot` of the STUN message these bytes hold.
    @inline(__always)
    func attributeValue(_ slot: AttributeSlot) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[slot.offset..<(slot.offset + slot.length)])
    }
}
