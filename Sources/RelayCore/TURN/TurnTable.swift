import DatagramEngine
import NetAddress
import STUN

/// The TURN server of one worker (RFC 8656 over UDP): the allocations whose clients' 5-tuples
/// reach this worker's listeners (SO_REUSEPORT keeps a 5-tuple on one worker), their relayed
/// sockets, permissions and channels. Only its worker's thread touches it: no locks.
///
/// The packet path (ChannelData and Send indications from clients, datagrams from peers) is
/// in this file and allocates nothing: client-to-peer payloads are sent from the received
/// buffer, peer-to-client framing is written into the table's arena. Requests (Allocate,
/// Refresh, CreatePermission, ChannelBind, Binding) are the control path, in
/// TurnTable+Requests.swift. Time comes from `now`, which the owner sets (tests move it).
final class TurnTable {
    let engine: DatagramEngine
    let settings: TurnSettings
    let shared: TurnShared
    let ports: PortPool
    let socketOptions: SocketOptions
    /// This worker's share of the egress cap (shared with its other tables).
    let egress: EgressShare
    /// Monotonic nanoseconds, set by the owner before each batch.
    var now: UInt64
    // Not optionals: reaching into an optional element copied the whole allocation (its
    // dictionaries retained and released) per datagram. A free index holds `.vacant`.
    @exclusivity(unchecked) var allocations: [Allocation] = []
    var freeAllocations: [Int32] = []
    @exclusivity(unchecked) var byClient: [TurnClient: Int32] = [:]
    /// The last client a datagram came from and its allocation: a client sending a burst (a
    /// video frame is several datagrams) costs one hash for the burst. Forgotten when that
    /// allocation goes; the key includes the listener, so one entry serves every listener.
    @exclusivity(unchecked) var lastClient = TurnClient.nobody
    @exclusivity(unchecked) var lastAllocation: Int32 = -1
    var transactions = TransactionCache()
    /// Answers to requests that did not authenticate, per source address (a fixed table).
    var answerBudget = AnswerBudget()
    /// Relayed sockets of removed allocations, closed after the engine's next flush.
    var closing: [RelayedSocket] = []
    /// When allocations next need housekeeping, so it visits only those (`expire`).
    var expiries = ExpiryQueue()
    /// Permissions and channels in force, kept as they change: the stats published ten times
    /// a second read these instead of walking every allocation.
    var permissionCount = 0
    var channelCount = 0
    @exclusivity(unchecked) var counters = TurnCounters()
    @exclusivity(unchecked) var transportCounters = TransportCounters()
    /// Clients over TCP and TLS, one entry per connection (`TurnTable+Streams`); a free
    /// index holds `.vacant`.
    var connections: [TurnConnection] = []
    var freeConnections: [Int32] = []
    /// Connections to close after this turn's flush: their last answer is queued on them.
    var connectionsToClose: [(index: Int32, reason: ConnectionCloseReason)] = []
    /// Open connections per transport, kept as they change (published as gauges).
    var openConnections = InlineArray<3, Int>(repeating: 0)
    /// TLS handshakes put off to the next turn, and the handshake steps left this turn.
    var deferredHandshakes: [Int32] = []
    var handshakeBudget = 0
    /// TLS connections gone since the worker last gave freed heap back (`HeapTrim`): their
    /// sessions were the connections' only heap memory.
    var tlsSessionsEnded = 0
    /// TLS records on their way from a session to its stream's output.
    let cipherScratch = ScratchBytes(capacity: 32 << 10)
    @exclusivity(unchecked) var random = MarkingRandom()
    let arena: OutgoingArena
    /// Where the record of each allocation that ends goes (`TurnTable+Accounting`); nil: none.
    var accounting: AccountingSink?
    /// Data indications need a transaction id; a counter from a random start is unique enough.
    @exclusivity(unchecked) var indicationID = TransactionID.random()

    init(engine: DatagramEngine, settings: TurnSettings, shared: TurnShared, ports: PortPool,
         socketOptions: SocketOptions = SocketOptions(), now: UInt64, egress: EgressShare = EgressShare(nil)) {
        self.engine = engine
        self.egress = egress
        self.settings = settings
        self.shared = shared
        self.ports = ports
        self.socketOptions = socketOptions
        self.now = now
        // A whole receive batch of the largest datagrams with their framing, so the arena
        // fills before a batch ends only when datagrams are unusually large.
        arena = OutgoingArena(capacity: max(256 << 10, engine.configuration.batchSize * (engine.configuration.maxDatagramSize + 64)))
    }

    /// Takes datagrams from clients on `socket` (the worker registers its listeners with this
    /// tag itself; a test's table is given one this way).
    func addListener(_ socket: SocketID) {
        engine.setOwner(socket, OwnerTag(.turnListener))
    }

    /// The owner flushed the engine: every slice of the arena has been sent, and sockets of
    /// allocations deleted during the batch can close.
    func flushed() {
        arena.reset()
        closePending()
        if !connectionsToClose.isEmpty { closeConnections() }
    }

    /// A datagram on a listener: ChannelData, a Send indication or a request.
    @inline(__always)
    func fromClient(_ datagram: ReceivedDatagram) {
        fromClient(TurnClient(listener: datagram.socket, address: datagram.source), datagram.bytes, datagram.trafficClass,
                   receivedAt: datagram.receivedAt)
    }

    /// One message from `client`, a datagram or one cut from its stream (`TurnTable+Streams`):
    /// ChannelData, a Send indication or a request. `received` is the IP header's traffic class
    /// of a datagram; a message from a stream has none of its own (RFC 8656 section 15: the
    /// relay sends it on with its default DSCP and Not-ECT), so it comes as zero, and with no
    /// receive time (`receivedAt` 0: never marked for backlog, being Not-ECT anyway).
    @inline(__always)
    func fromClient(_ client: TurnClient, _ bytes: UnsafeRawBufferPointer, _ received: TrafficClass, receivedAt: UInt64) {
        // Indexed, not `.first`: the generic Collection accessor allocates in debug builds.
        guard bytes.count > 0 else { return counters.add(.malformed) }
        let first = bytes[0]
        if ChannelData.isChannelData(first) {
            channelData(client, bytes, received, receivedAt: receivedAt)
        } else if first & 0xC0 == 0 {
            stun(client, bytes, received, receivedAt: receivedAt)
        } else {
            counters.add(.malformed)
        }
    }

    /// The allocation of the client a datagram came from: the last one again, or by hash.
    @inline(__always)
    func allocationIndex(_ client: TurnClient) -> Int? {
        if lastAllocation >= 0 && lastClient == client { return Int(lastAllocation) }
        guard let index = byClient[client] else { return nil }
        lastClient = client
        lastAllocation = index
        return Int(index)
    }

    /// ChannelData from a client: the channel's entry says where to and whether its permission
    /// still holds, so past the client's allocation this is one lookup.
    @inline(__always)
    func channelData(_ client: TurnClient, _ bytes: UnsafeRawBufferPointer, _ received: TrafficClass, receivedAt: UInt64) {
        guard let (channel, length) = ChannelData.parse(bytes) else { return counters.add(.malformed) }
        guard let a = allocationIndex(client) else { return counters.add(.noAllocation) }
        guard let binding = allocations[a].channels.binding(number: channel), binding.expires > now else {
            return counters.add(.noChannel)
        }
        guard binding.permissionExpires > now else { return refused(a, .noPermission) }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[ChannelData.headerSize..<(ChannelData.headerSize + length)])
        guard toPeer(a, binding.peer, payload, received, receivedAt: receivedAt) else { return }
        allocations[a].counters.channelDataIn &+= 1
        counters.channelDataToPeers &+= 1
    }

    func stun(_ client: TurnClient, _ bytes: UnsafeRawBufferPointer, _ received: TrafficClass, receivedAt: UInt64) {
        let index: AttributeIndex
        do {
            index = try AttributeIndex(parsing: bytes)
        } catch {
            return counters.add(.malformed)
        }
        switch index.type.messageClass {
        case .indication where index.type.method == .send: sendIndication(client, index, bytes, received, receivedAt: receivedAt)
        case .request: request(client, index, bytes)
        default: break  // other indications and responses: a server ignores them
        }
    }

    /// A Send indication: its DATA goes to its XOR-PEER-ADDRESS if permitted. Never answered.
    @inline(__always)
    func sendIndication(_ client: TurnClient, _ index: AttributeIndex, _ bytes: UnsafeRawBufferPointer, _ received: TrafficClass,
                        receivedAt: UInt64) {
        guard let a = allocationIndex(client) else { return counters.add(.noAllocation) }
        guard let peerSlot = index.first(.xorPeerAddress), let dataSlot = index.first(.data),
              let peer = XORAddress.decode(value(peerSlot, bytes), index.transactionID) else {
            return counters.add(.malformed)
        }
        // A permission is per address; the port of each Send is checked too, so no Send
        // reaches one of the relay's own sockets on a permitted address.
        let relayed = shared.relayedPorts
        if case .refused(let reason) = settings.peerPolicy.decide(peer: peer, isRelayedAddress: { relayed.contains($0) }) {
            counters.add(reason)
            return counters.add(.forbiddenPeer)
        }
        guard allocations[a].permits(peer, now: now) else { return refused(a, .noPermission) }
        guard toPeer(a, peer, value(dataSlot, bytes), received, receivedAt: receivedAt) else { return }
        allocations[a].counters.indicationsIn &+= 1
        counters.indicationsToPeers &+= 1
    }

    /// Sends `payload` from the allocation's relayed socket to `peer` (whose permission the
    /// caller has checked) when the bandwidth quota has room; counts the drop otherwise.
    /// `receivedAt` is the datagram's receive time (0: unknown), for marking by backlog.
    @inline(__always)
    func toPeer(_ a: Int, _ peer: Endpoint, _ payload: UnsafeRawBufferPointer, _ received: TrafficClass, receivedAt: UInt64) -> Bool {
        guard let relay = allocations[a].relay(for: peer) else {
            refused(a, .noPermission)
            return false
        }
        // Channels and permissions are checked once, when made; a relayed port they named may
        // since have gone back to the pool.
        guard !settings.peerPolicy.isStaleRelayedPeer(peer, relayed: shared.relayedPorts) else {
            refused(a, .staleRelayedPeer)
            return false
        }
        var marking = settings.marking.apply(received)
        guard policed(a, payload.count, &marking) else { return false }
        markBacklog(a, receivedAt, &marking)
        guard egressAdmits(a, payload.count, &marking) else { return false }
        engine.enqueue(socket: relay.socket, to: peer, trafficClass: marking, bytes: payload)
        allocations[a].counters.ecnFromClient[Int(received.ecn.rawValue)] &+= 1
        allocations[a].counters.ecnToPeers[Int(marking.ecn.rawValue)] &+= 1
        allocations[a].counters.bytesToPeers &+= UInt64(payload.count)
        counters.bytesToPeers &+= UInt64(payload.count)
        let transport = allocations[a].transport.rawValue
        transportCounters.datagramsToPeers[transport] &+= 1
        transportCounters.bytesToPeers[transport] &+= UInt64(payload.count)
        return true
    }

    /// A datagram from a peer to relayed socket `a` (the owner found the allocation by the
    /// socket's slot): to the client as ChannelData when the peer has a channel, as a Data
    /// indication otherwise; dropped without a permission. A peer with a channel costs one
    /// lookup (the channel carries its permission's expiry), one without costs two.
    @inline(__always)
    func fromPeer(_ a: Int, _ datagram: ReceivedDatagram) {
        let peer = datagram.source
        let binding = allocations[a].channels.binding(peer: peer)
        let permitted = if let binding { binding.permissionExpires > now } else { allocations[a].permits(peer, now: now) }
        guard permitted else { return refused(a, .noPermission) }
        let payload = datagram.bytes
        var marking = settings.marking.apply(datagram.trafficClass)
        guard policed(a, payload.count, &marking) else { return }
        markBacklog(a, datagram.receivedAt, &marking)
        let client = allocations[a].client
        let channel = binding.flatMap { $0.expires > now ? $0.number : nil }
        // The egress cap counts what goes on the wire: the payload with its framing. Over a
        // stream ChannelData is padded to a multiple of 4 (RFC 8656 section 12.5).
        let size = channel != nil ? ChannelData.headerSize + (client.isStream ? (payload.count + 3) & ~3 : payload.count)
            : DataIndication.overhead(for: peer) + (payload.count + 3) & ~3
        guard egressAdmits(a, size, &marking) else { return }
        let framed: UnsafeMutableRawBufferPointer
        if let channel {
            guard let out = room(size) else { return counters.add(.tooLarge) }
            ChannelData.writeHeader(channel: channel, length: payload.count, to: out, at: 0)
            if payload.count > 0 { (out.baseAddress! + ChannelData.headerSize).copyMemory(from: payload.baseAddress!, byteCount: payload.count) }
            let end = ChannelData.headerSize + payload.count
            if size > end { (out.baseAddress! + end).initializeMemory(as: UInt8.self, repeating: 0, count: size - end) }
            framed = out
            allocations[a].counters.channelDataOut &+= 1
            counters.channelDataToClients &+= 1
        } else {
            guard let out = room(size) else { return counters.add(.tooLarge) }
            indicationID.low &+= 1
            let written = DataIndication.write(peer: peer, payload: payload, id: indicationID, to: out, at: 0)
            guard written > 0 else { return counters.add(.tooLarge) }
            framed = UnsafeMutableRawBufferPointer(rebasing: out[0..<written])
            allocations[a].counters.indicationsOut &+= 1
            counters.indicationsToClients &+= 1
        }
        if client.isStream {
            guard toStream(client, UnsafeRawBufferPointer(framed)) else { return refused(a, .clientBackpressure) }
        } else {
            engine.enqueue(socket: client.listener, to: client.address, trafficClass: marking, bytes: UnsafeRawBufferPointer(framed))
        }
        allocations[a].counters.ecnFromPeers[Int(datagram.trafficClass.ecn.rawValue)] &+= 1
        allocations[a].counters.ecnToClient[Int(marking.ecn.rawValue)] &+= 1
        allocations[a].counters.bytesToClient &+= UInt64(payload.count)
        counters.bytesToClients &+= UInt64(payload.count)
        let transport = allocations[a].transport.rawValue
        transportCounters.datagramsToClients[transport] &+= 1
        transportCounters.bytesToClients[transport] &+= UInt64(payload.count)
    }

    /// Arena space for one outgoing datagram; when the arena is full the engine is flushed
    /// first (what it sent no longer needs its bytes). nil only for a datagram larger than
    /// the whole arena.
    @inline(__always)
    func room(_ count: Int) -> UnsafeMutableRawBufferPointer? {
        if let slice = arena.take(count) { return slice }
        engine.flush()
        arena.reset()
        return arena.take(count)
    }

    /// The allocation's bandwidth quota (`Policer`: one second of burst, both directions
    /// together) for `bytes` leaving with `marking`: false when it drops them (counted); CE in
    /// `marking` when it marks them.
    @inline(__always)
    func policed(_ a: Int, _ bytes: Int, _ marking: inout TrafficClass) -> Bool {
        guard allocations[a].bandwidth.isLimited else { return true }
        switch allocations[a].bandwidth.police(UInt64(bytes), marking.ecn, now: now, marks: allocations[a].ecnMarking,
                                               thresholds: settings.ecnThresholds, random: &random) {
        case .pass: return true
        case .mark:
            marking = marking.markedCE
            count(a, .rateLimit)
            return true
        case .drop:
            refused(a, .bandwidth)
            return false
        }
    }

    /// The egress cap for `bytes` of allocation `a` leaving with `marking`, as `policed`.
    @inline(__always)
    func egressAdmits(_ a: Int, _ bytes: Int, _ marking: inout TrafficClass) -> Bool {
        guard egress.isOn else { return true }
        switch egress.police(bytes, marking.ecn, now: now, marks: allocations[a].ecnMarking,
                             thresholds: settings.ecnThresholds, random: &random) {
        case .pass: return true
        case .mark:
            marking = marking.markedCE
            count(a, .egress)
            return true
        case .drop:
            refused(a, .egress)
            return false
        }
    }

    /// CE in `marking` when the datagram, received at `receivedAt`, waited in its socket's queue
    /// past the backlog threshold of its codepoint (`BacklogThresholds`). After the quota (which
    /// may have marked it already), before the egress cap.
    @inline(__always)
    func markBacklog(_ a: Int, _ receivedAt: UInt64, _ marking: inout TrafficClass) {
        guard settings.backlogThresholds.marks(marking.ecn, receivedAt: receivedAt, now: now), allocations[a].ecnMarking else { return }
        marking = marking.markedCE
        count(a, .backlog)
    }

    @inline(__always)
    func count(_ a: Int, _ cause: CEMarkCause) {
        allocations[a].counters.ceMarked.add(cause)
        counters.ceMarks.add(cause)
    }

    /// A datagram of allocation `a` not relayed, counted for the allocation and by reason.
    @inline(__always)
    func refused(_ a: Int, _ reason: TurnDropReason) {
        allocations[a].counters.drops[reason.rawValue] &+= 1
        counters.add(reason)
    }

    @inline(__always)
    func value(_ slot: AttributeSlot, _ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[slot.offset..<(slot.offset + slot.length)])
    }
}
