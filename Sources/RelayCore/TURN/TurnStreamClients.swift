import DatagramEngine
import NetAddress
import STUN
import TLS

/// TURN clients over TCP and TLS on one worker (RFC 8656 over a stream): each connection is
/// one client's 5-tuple, with at most one allocation, which ends when the connection closes.
/// Messages are cut out of the stream (`StreamFrame`) and handed to the `TurnTable` exactly as
/// datagrams are; what goes to a client is written to its stream, ChannelData padded to 4
/// bytes. A connection that goes wrong (bad framing, a failed handshake, a deadline) is closed
/// alone: no other client notices.
///
/// Contract: the one owner of TURN's streams. Its table hands it accepts and stream events,
/// and asks it to `send` to a stream client; it tells its table of each message and of each
/// connection whose allocation must end. Only the worker's thread touches it.
final class TurnStreamClients<Engine: TableEngine> {
    let engine: Engine
    let settings: TurnSettings
    let shared: TurnSharedState
    let arena: OutgoingArena<Engine>
    let clock: WorkerClock
    /// The table that handles the messages cut from the streams and owns the allocations
    /// (`attach`). It owns this object, so the reference needs no count.
    private(set) unowned(unsafe) var table: TurnTable<Engine>?
    /// One entry per connection; a free index holds `.vacant`.
    var connections: [TurnConnection] = []
    var freeConnections: [Int32] = []
    /// Connections to close after this turn's flush: their last answer is queued on them.
    var connectionsToClose: [(connection: Int32, reason: ConnectionCloseReason)] = []
    /// Connections, closes and handshakes per transport; the table adds the rest.
    var transportCounters = TransportCounters()
    /// Open connections per transport, kept as they change (published as gauges).
    private(set) var openConnections = InlineArray<3, Int>(repeating: 0)
    /// TLS handshakes put off to the next turn, and the handshake steps left this turn.
    var deferredHandshakes: [Int32] = []
    var handshakeBudget = 0
    /// TLS connections gone since the worker last gave freed heap back (`HeapTrim`): their
    /// sessions were the connections' only heap memory.
    var tlsSessionsEnded = 0
    /// TLS records on their way from a session to its stream's output.
    let cipherScratch = ScratchBytes(capacity: 32 << 10)
    /// Connections closed on accept for a limit the operator sets, for the log (rate-limited).
    private var notices: TurnNotices

    init(engine: Engine, settings: TurnSettings, shared: TurnSharedState, arena: OutgoingArena<Engine>, clock: WorkerClock) {
        self.engine = engine
        self.settings = settings
        self.shared = shared
        self.arena = arena
        self.clock = clock
        notices = TurnNotices(sink: settings.notices)
    }

    /// Gives the clients their table, once, right after it is made.
    func attach(to table: TurnTable<Engine>) { self.table = table }

    /// The transport of the client on `connection`.
    func transport(of connection: Int32) -> TurnTransport { connections[Int(connection)].transport }

    /// A connection accepted on a TURN listener of `transport`: admitted within the limits,
    /// given an entry and a deadline, or closed at once and counted.
    func accepted(_ stream: SocketID, peer: Endpoint, transport: TurnTransport) {
        if let refusal = shared.admitConnection(from: peer, limits: settings.streamLimits) {
            engine.close(stream, keepingOutput: false)
            transportCounters.close(transport, refusal)
            notices.refused(refusal == .overCapacity ? .connectionLimit : .sourceConnectionLimit, code: nil, client: peer, now: clock.now)
            return
        }
        var security = TurnConnection.Security.plain
        if transport == .tls {
            guard let session = newTLSSession() else {
                shared.releaseConnection(from: peer)
                engine.close(stream, keepingOutput: false)
                return transportCounters.close(transport, .tlsError)
            }
            security = .tls(session, PlaintextBuffer())
        }
        let connection = TurnConnection(stream: stream, peer: peer, security: security)
        let index = freeConnections.popLast() ?? Int32(connections.count)
        if Int(index) < connections.count { connections[Int(index)] = connection } else { connections.append(connection) }
        engine.setOwner(stream, OwnerTag(.turnConnection, index))
        engine.setDeadline(stream, clock.now &+ (transport == .tls ? settings.streamLimits.handshakeNanoseconds
                                                                   : settings.streamLimits.firstMessageNanoseconds))
        transportCounters.opened[transport.rawValue] &+= 1
        openConnections[transport.rawValue] += 1
    }

    /// An event of `connection`.
    func handle(_ kind: StreamEvent.Kind, on connection: Int) {
        guard connection < connections.count, connections[connection].isLive else { return }
        switch kind {
        case .data:
            read(connection)
        case .writable:
            if connections[connection].transport == .tls { sendCiphertext(connection) }
            if connections[connection].reading == .waitingForRoom {
                connections[connection].reading = .ready
                read(connection)
            }
        case .closed(let reason):
            closed(connection, reason)
        case .accepted:
            break
        }
    }

    private func read(_ connection: Int) {
        if connections[connection].transport == .tls { tlsData(connection) } else { tcpData(connection) }
    }

    /// Plain TCP: the messages in the stream's input, handled in place (no copy).
    private func tcpData(_ connection: Int) {
        let stream = connections[connection].stream
        let input = engine.input(stream)
        // A TLS client on the plaintext port: its ClientHello's first byte says so.
        if !connections[connection].hasSpoken, input.count > 0, TLSRecord.looksLikeTLS(firstByte: input[0]) {
            return close(connection, .tlsOnTCP)
        }
        let (used, failure) = messages(connection, input)
        engine.consume(stream, used)
        if failure != nil { close(connection, .framing) }
    }

    /// Handles every whole message at the front of `bytes` as from `connection`'s client;
    /// returns the bytes used, and the framing error that stopped it, if any. The engine sends
    /// a relayed payload from where it lies, at the flush: `bytes` that are written over before
    /// then (a TLS connection's plaintext, reused for its next record) are `reusedBeforeFlush`,
    /// and each message is copied into the arena first. A request whose answer the output has
    /// no room for stops it (`waitingForRoom`): the request and what follows stay unused.
    func messages(_ connection: Int, _ bytes: UnsafeRawBufferPointer, reusedBeforeFlush: Bool = false) -> (used: Int, failure: StreamFrameError?) {
        let client = connections[connection].client(connectionIndex: connection)
        var offset = 0
        var handled = 0
        var failure: StreamFrameError?
        connections[connection].reading = .ready
        frames: while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            // Until a client has spoken STUN it has no channel: ChannelData first is not TURN
            // (an HTTP "GET" would pass for channel 0x4745 and wait for 21,536 bytes).
            let stunOnly = !connections[connection].hasSpoken && handled == 0
            switch StreamFrame.front(of: rest, maximum: TurnStreamLimits.maxMessage, stunOnly: stunOnly) {
            case .message(let length, let consumed):
                if Self.messageClass(rest) == .request, let room = roomWanted(connection, requestBytes: length) {
                    waitForRoom(connection, pendingAtMost: room)
                    break frames
                }
                var message = UnsafeRawBufferPointer(rebasing: rest[0..<length])
                if reusedBeforeFlush, let copy = arena.room(length) {
                    copy.copyMemory(from: message)
                    message = UnsafeRawBufferPointer(copy)
                }
                table.unsafelyUnwrapped.fromClient(client, message, TrafficClass(rawValue: 0), receivedAt: 0)
                offset += consumed
                handled += 1
            case .incomplete:
                break frames
            case .invalid(let error):
                failure = error
                break frames
            }
        }
        if handled > 0 { markSpoken(connection) }
        return (offset, failure)
    }

    /// `connection` sent a valid message: the first-message deadline is over; without an
    /// allocation the idle deadline starts again.
    private func markSpoken(_ connection: Int) {
        switch connections[connection].phase {
        case .allocated, .vacant: return
        case .awaitingFirstMessage, .spoken: connections[connection].phase = .spoken
        case .closing: connections[connection].phase = .closing(afterSpeaking: true)
        }
        engine.setDeadline(connections[connection].stream, clock.now &+ settings.streamLimits.idleNanoseconds)
    }

    /// Writes `bytes` (one whole message) to a stream client; false, writing nothing, when its
    /// output is at its bound (a client that does not read) or it is closing. Relayed
    /// datagrams stop at `relayedOutputBytes`; answers (STUN responses) may use the room kept
    /// behind it, which a request checked for before it was handled (`roomWanted`).
    func send(_ bytes: UnsafeRawBufferPointer, to client: TurnClient) -> Bool {
        let connection = Int(client.connectionIndex)
        // A connection closing after this turn still takes its last answers (a Refresh of 0).
        guard connections[connection].isLive else { return false }
        let bound: Int
        switch Self.messageClass(bytes) {
        case .successResponse?, .errorResponse?: bound = engine.configuration.streamHighWater
        default: bound = TurnStreamLimits.relayedOutputBytes
        }
        if connections[connection].transport == .tls { return sendTLS(connection, bytes, bound: bound) }
        return engine.write(client.socket, bytes, pendingAtMost: bound)
    }

    /// The STUN class of the message at the front of `bytes`; nil for ChannelData.
    static func messageClass(_ bytes: UnsafeRawBufferPointer) -> MessageClass? {
        guard bytes.count >= 2, bytes[0] & 0xC0 == 0 else { return nil }
        return MessageType(wire: UInt16(bytes[0]) << 8 | UInt16(bytes[1])).messageClass
    }

    /// nil when `connection`'s output has room for the answer to a request of `requestBytes`,
    /// else the pending output at which it will: what is pending (in the engine and, over TLS,
    /// in the session) and the longest answer such a request can have, as a record over TLS,
    /// must fit within the whole output once the client has an allocation, and within
    /// `outputBeforeAllocation` until then. An empty output takes any answer.
    private func roomWanted(_ connection: Int, requestBytes: Int) -> Int? {
        let pending = engine.outputPending(connections[connection].stream) + (connections[connection].tls?.pendingCiphertext ?? 0)
        let answer = TLSRecord.ciphertextBound(plaintextBytes: requestBytes + TurnStreamLimits.answerAllowance)
        let bound = connections[connection].phase == .allocated ? engine.configuration.streamHighWater
                                                                : TurnStreamLimits.outputBeforeAllocation
        return pending == 0 || pending + answer <= bound ? nil : max(0, bound - answer)
    }

    /// `connection` reads no further until its output is down to `pendingAtMost`: its input
    /// stays where it is (and, once full, the engine stops reading the socket), and the
    /// engine's `writable` event resumes it.
    private func waitForRoom(_ connection: Int, pendingAtMost: Int) {
        connections[connection].reading = .waitingForRoom
        engine.notifyWritable(connections[connection].stream, pendingAtMost: pendingAtMost)
    }

    /// The client on `connection` has an allocation now: the connection lives as long.
    func allocationMade(on connection: Int32) {
        connections[Int(connection)].phase = .allocated
        engine.setDeadline(connections[Int(connection)].stream, nil)
    }

    /// The allocation of `connection` ended: the connection closes after this turn's flush,
    /// so the answer that ended it (a Refresh of 0) still reaches the client.
    func allocationEnded(on connection: Int32) {
        let index = Int(connection)
        guard connections[index].isOpen else { return }
        connections[index].phase = .closing(afterSpeaking: connections[index].hasSpoken)
        connectionsToClose.append((connection, .allocationEnded))
    }

    /// Closes `connection` for `reason` (counted now), sending what is queued for it first.
    func close(_ connection: Int, _ reason: ConnectionCloseReason) {
        guard connections[connection].isOpen else { return }
        connections[connection].phase = .closing(afterSpeaking: connections[connection].hasSpoken)
        transportCounters.close(connections[connection].transport, reason)
        table.unsafelyUnwrapped.endAllocation(of: connections[connection].client(connectionIndex: connection))
        finishClose(connection)
    }

    /// Ends `connection` in the engine, after what is queued for it; over TLS with a
    /// close_notify, so the client can tell the relay's close from a forged reset.
    private func finishClose(_ connection: Int) {
        if let tls = connections[connection].tls, tls.isEstablished {
            tls.shutdown()
            sendCiphertext(connection)
        }
        engine.close(connections[connection].stream)
    }

    /// The engine flushed: the connections whose allocations ended this turn close now that
    /// their answers are queued.
    func flushed() {
        guard !connectionsToClose.isEmpty else { return }
        let due = connectionsToClose
        connectionsToClose.removeAll(keepingCapacity: true)
        for (connection, reason) in due where connections[Int(connection)].isLive {
            transportCounters.close(connections[Int(connection)].transport, reason)
            finishClose(Int(connection))
        }
    }

    /// The engine says `connection` is gone: its allocation goes with it (RFC 8656: the
    /// connection is the 5-tuple), and its entry is free.
    private func closed(_ connection: Int, _ reason: StreamCloseReason) {
        let entry = connections[connection]
        if entry.isOpen {
            let handshaking = entry.transport == .tls && entry.tls?.isEstablished != true
            let counted: ConnectionCloseReason
            switch reason {
            case .peerClosed: counted = .peerClosed
            case .reset: counted = .reset
            case .limit: counted = .kernelLimit
            case .byOwner: counted = .shutdown
            case .timeout:
                if handshaking {
                    counted = .handshakeTimeout
                    transportCounters.handshakesFailed[HandshakeFailure.timeout.rawValue] &+= 1
                } else {
                    counted = entry.hasSpoken ? .idleTimeout : .messageTimeout
                }
            }
            if handshaking && reason == .peerClosed {
                transportCounters.handshakesFailed[HandshakeFailure.peerClosed.rawValue] &+= 1
            }
            transportCounters.close(entry.transport, counted)
        }
        // Closing already, so ending the allocation queues no second close for this index.
        connections[connection].phase = .closing(afterSpeaking: entry.hasSpoken)
        table.unsafelyUnwrapped.endAllocation(of: entry.client(connectionIndex: connection))
        shared.releaseConnection(from: entry.peer)
        openConnections[entry.transport.rawValue] -= 1
        if entry.transport == .tls { tlsSessionsEnded += 1 }
        connections[connection] = .vacant
        freeConnections.append(Int32(connection))
    }

    /// Closes every connection (the worker is stopping); the engine sends nothing more.
    func closeAll() {
        for connection in connections.indices where connections[connection].isLive {
            if connections[connection].isOpen { transportCounters.close(connections[connection].transport, .shutdown) }
            shared.releaseConnection(from: connections[connection].peer)
            openConnections[connections[connection].transport.rawValue] -= 1
            engine.close(connections[connection].stream, keepingOutput: false)
            connections[connection] = .vacant
        }
        freeConnections.removeAll()
        connectionsToClose.removeAll()
    }

    /// Whether TLS sessions ended since the last call: the worker then gives freed heap back.
    func takeEndedTLSSessions() -> Bool {
        defer { tlsSessionsEnded = 0 }
        return tlsSessionsEnded > 0
    }
}
