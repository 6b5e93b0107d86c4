import DatagramEngine
import NetAddress
import STUN
import TLS

/// TURN clients over TCP and TLS (RFC 8656 over a stream): each connection is one client's
/// 5-tuple, with at most one allocation, deleted when the connection closes. Messages are cut
/// out of the stream (`StreamFrame`) and handled as datagrams are; what goes to the client is
/// written to its stream, ChannelData padded to 4 bytes. A connection that goes wrong (bad
/// framing, a failed handshake, a deadline) is closed alone: no other client notices.
extension TurnTable {
    /// Stream listeners carry this role with the transport as index.
    func listenerTransport(_ owner: OwnerTag) -> TurnTransport { owner.index == 1 ? .tls : .tcp }

    /// A connection accepted on a TURN listener of `transport`: admitted within the limits,
    /// given an entry and a deadline, or closed at once and counted.
    func accepted(_ stream: SocketID, peer: Endpoint, transport: TurnTransport) {
        if let refusal = shared.admitConnection(from: peer, limits: settings.streamLimits) {
            engine.close(stream, keepingOutput: false)
            transportCounters.close(transport, refusal)
            return
        }
        var connection = TurnConnection(stream: stream, peer: peer, transport: transport)
        if transport == .tls {
            guard let session = newTLSSession() else {
                shared.releaseConnection(from: peer)
                engine.close(stream, keepingOutput: false)
                return transportCounters.close(transport, .tlsError)
            }
            connection.tls = session
            connection.plaintext = PlaintextBuffer()
        }
        let index = freeConnections.popLast() ?? Int32(connections.count)
        if Int(index) < connections.count { connections[Int(index)] = connection } else { connections.append(connection) }
        engine.setOwner(stream, OwnerTag(.turnConnection, index))
        engine.setDeadline(stream, now &+ (transport == .tls ? settings.streamLimits.handshakeNanoseconds
                                                               : settings.streamLimits.firstMessageNanoseconds))
        transportCounters.opened[transport.rawValue] &+= 1
        openConnections[transport.rawValue] += 1
    }

    /// An event of connection `c`.
    func streamEvent(_ c: Int, _ kind: StreamEvent.Kind) {
        guard c < connections.count, connections[c].live else { return }
        switch kind {
        case .data:
            if connections[c].transport == .tls { tlsData(c) } else { tcpData(c) }
        case .writable:
            if connections[c].transport == .tls { sendCiphertext(c) }
            if connections[c].waitingForRoom {
                connections[c].waitingForRoom = false
                if connections[c].transport == .tls { tlsData(c) } else { tcpData(c) }
            }
        case .closed(let reason):
            connectionClosed(c, reason)
        case .accepted:
            break
        }
    }

    /// Plain TCP: the messages in the stream's input, handled in place (no copy).
    func tcpData(_ c: Int) {
        let stream = connections[c].stream
        let input = engine.input(stream)
        // A TLS client on the plaintext port: its ClientHello's first byte says so.
        if !connections[c].spoke, input.count > 0, TLSRecord.looksLikeTLS(firstByte: input[0]) { return close(c, .tlsOnTCP) }
        let (used, failure) = messages(c, input)
        engine.consume(stream, used)
        if failure != nil { close(c, .framing) }
    }

    /// Handles every whole message at the front of `bytes` as from connection `c`'s client;
    /// returns the bytes used, and the framing error that stopped it, if any. The engine sends
    /// a relayed payload from where it lies, at the flush: `bytes` that are written over before
    /// then (a TLS connection's plaintext, reused for its next record) are `reusedBeforeFlush`,
    /// and each message is copied into the arena first. A request whose answer the output has
    /// no room for stops it (`waitingForRoom`): the request and what follows stay unused.
    func messages(_ c: Int, _ bytes: UnsafeRawBufferPointer, reusedBeforeFlush: Bool = false) -> (used: Int, failure: StreamFrameError?) {
        let client = connections[c].client(c)
        var offset = 0
        var handled = 0
        var failure: StreamFrameError?
        connections[c].waitingForRoom = false
        frames: while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            // Until a client has spoken STUN it has no channel: ChannelData first is not TURN
            // (an HTTP "GET" would pass for channel 0x4745 and wait for 21,536 bytes).
            let stunOnly = !connections[c].spoke && handled == 0
            switch StreamFrame.front(of: rest, maximum: TurnStreamLimits.maxMessage, stunOnly: stunOnly) {
            case .message(let length, let consumed):
                if Self.streamClass(rest) == .request, let room = roomWanted(c, requestBytes: length) {
                    waitForRoom(c, pendingAtMost: room)
                    break frames
                }
                var message = UnsafeRawBufferPointer(rebasing: rest[0..<length])
                if reusedBeforeFlush, let copy = room(length) {
                    copy.copyMemory(from: message)
                    message = UnsafeRawBufferPointer(copy)
                }
                fromClient(client, message, TrafficClass(rawValue: 0), receivedAt: 0)
                offset += consumed
                handled += 1
            case .incomplete:
                break frames
            case .invalid(let error):
                failure = error
                break frames
            }
        }
        if handled > 0 { spoke(c) }
        return (offset, failure)
    }

    /// Connection `c` sent a valid message: the first-message deadline is over; without an
    /// allocation the idle deadline starts again.
    func spoke(_ c: Int) {
        guard connections[c].live else { return }
        connections[c].spoke = true
        if !connections[c].allocated { engine.setDeadline(connections[c].stream, now &+ settings.streamLimits.idleNanoseconds) }
    }

    /// Writes `bytes` (one whole message) to a stream client; false, writing nothing, when its
    /// output is at its bound (a client that does not read) or it is closing. Relayed
    /// datagrams stop at `relayedOutputBytes`; answers (STUN responses) may use the room kept
    /// behind it, which a request checked for before it was handled (`roomWanted`).
    func toStream(_ client: TurnClient, _ bytes: UnsafeRawBufferPointer) -> Bool {
        let c = Int(client.connection)
        // A connection closing after this turn still takes its last answers (a Refresh of 0).
        guard connections[c].live else { return false }
        let bound: Int
        switch Self.streamClass(bytes) {
        case .successResponse?, .errorResponse?: bound = engine.configuration.streamHighWater
        default: bound = TurnStreamLimits.relayedOutputBytes
        }
        if connections[c].transport == .tls { return toTLS(c, bytes, bound: bound) }
        return engine.write(client.listener, bytes, pendingAtMost: bound)
    }

    /// The STUN class of the message at the front of `bytes`; nil for ChannelData.
    static func streamClass(_ bytes: UnsafeRawBufferPointer) -> MessageClass? {
        guard bytes.count >= 2, bytes[0] & 0xC0 == 0 else { return nil }
        return MessageType(wire: UInt16(bytes[0]) << 8 | UInt16(bytes[1])).messageClass
    }

    /// nil when connection `c`'s output has room for the answer to a request of
    /// `requestBytes`, else the pending output at which it will: what is pending (in the engine
    /// and, over TLS, in the session) and the longest answer such a request can have, as a
    /// record over TLS, must fit within the whole output once the client has an allocation,
    /// and within `outputBeforeAllocation` until then. An empty output takes any answer.
    func roomWanted(_ c: Int, requestBytes: Int) -> Int? {
        let pending = engine.outputPending(connections[c].stream) + (connections[c].tls?.pendingCiphertext ?? 0)
        let answer = TLSRecord.ciphertextBound(plaintextBytes: requestBytes + TurnStreamLimits.answerAllowance)
        let bound = connections[c].allocated ? engine.configuration.streamHighWater : TurnStreamLimits.outputBeforeAllocation
        return pending == 0 || pending + answer <= bound ? nil : max(0, bound - answer)
    }

    /// Connection `c` reads no further until its output is down to `pendingAtMost`: its input
    /// stays where it is (and, once full, the engine stops reading the socket), and the
    /// engine's `writable` event resumes it.
    func waitForRoom(_ c: Int, pendingAtMost: Int) {
        connections[c].waitingForRoom = true
        engine.notifyWritable(connections[c].stream, pendingAtMost: pendingAtMost)
    }

    func allocationMade(on c: Int) {
        connections[c].allocated = true
        engine.setDeadline(connections[c].stream, nil)
    }

    /// The allocation of connection `c` ended: the connection closes after this turn's flush,
    /// so the answer that ended it (a Refresh of 0) still reaches the client.
    func allocationEnded(on c: Int) {
        guard connections[c].live, !connections[c].closing else { return }
        connections[c].allocated = false
        connections[c].closing = true
        connectionsToClose.append((Int32(c), .allocationEnded))
    }

    /// Closes connection `c` for `reason` (counted now), sending what is queued for it first.
    func close(_ c: Int, _ reason: ConnectionCloseReason) {
        guard connections[c].live, !connections[c].closing else { return }
        connections[c].closing = true
        transportCounters.close(connections[c].transport, reason)
        if let a = byClient[connections[c].client(c)] {
            removeAllocation(Int(a), .connectionClosed)
            counters.allocationsDeleted &+= 1
        }
        finishClose(c)
    }

    /// Ends connection `c` in the engine, after what is queued for it; over TLS with a
    /// close_notify, so the client can tell the relay's close from a forged reset.
    func finishClose(_ c: Int) {
        if let tls = connections[c].tls, tls.isEstablished {
            tls.shutdown()
            sendCiphertext(c)
        }
        engine.close(connections[c].stream)
    }

    /// The connections whose allocations ended this turn, closed once their answers are queued.
    func closeConnections() {
        let due = connectionsToClose
        connectionsToClose.removeAll(keepingCapacity: true)
        for (c, reason) in due where connections[Int(c)].live {
            transportCounters.close(connections[Int(c)].transport, reason)
            finishClose(Int(c))
        }
    }

    /// The engine says connection `c` is gone: its allocation goes with it (RFC 8656: the
    /// connection is the 5-tuple), and its entry is free.
    func connectionClosed(_ c: Int, _ reason: StreamCloseReason) {
        let connection = connections[c]
        if !connection.closing {
            let counted: ConnectionCloseReason
            switch reason {
            case .peerClosed: counted = .peerClosed
            case .reset: counted = .reset
            case .limit: counted = .kernelLimit
            case .byOwner: counted = .shutdown
            case .timeout:
                if connection.transport == .tls && connection.tls?.isEstablished != true {
                    counted = .handshakeTimeout
                    transportCounters.handshakesFailed[HandshakeFailure.timeout.rawValue] &+= 1
                } else {
                    counted = connection.spoke ? .idleTimeout : .messageTimeout
                }
            }
            if connection.transport == .tls && connection.tls?.isEstablished != true && reason == .peerClosed {
                transportCounters.handshakesFailed[HandshakeFailure.peerClosed.rawValue] &+= 1
            }
            transportCounters.close(connection.transport, counted)
        }
        // Closing already, so removing the allocation queues no second close for this index.
        connections[c].closing = true
        if let a = byClient[connection.client(c)] {
            removeAllocation(Int(a), .connectionClosed)
            counters.allocationsDeleted &+= 1
        }
        shared.releaseConnection(from: connection.peer)
        openConnections[connection.transport.rawValue] -= 1
        if connection.transport == .tls { tlsSessionsEnded += 1 }
        connections[c] = .vacant
        freeConnections.append(Int32(c))
    }

    /// Closes every connection (the worker is stopping); the engine sends nothing more.
    func closeAllConnections() {
        for c in connections.indices where connections[c].live {
            if !connections[c].closing { transportCounters.close(connections[c].transport, .shutdown) }
            shared.releaseConnection(from: connections[c].peer)
            openConnections[connections[c].transport.rawValue] -= 1
            engine.close(connections[c].stream, keepingOutput: false)
            connections[c] = .vacant
        }
        freeConnections.removeAll()
    }
}
