import DatagramEngine
import STUN
import TLS

/// TURN over TLS (`turns:`): the connection's ciphertext comes from and goes to its stream in
/// the engine, and the library sees only memory (`TLSSession`'s BIO pair), so the worker never
/// blocks in it. Decrypted bytes collect in the connection's `PlaintextBuffer` until they
/// make whole messages, which are handled exactly as over TCP.
extension TurnStreamClients {
    /// A session with the context in force now (SIGHUP may have replaced it since the last).
    func newTLSSession() -> TLSSession? {
        guard let context = shared.tlsContext else { return nil }
        return try? TLSSession(server: context)
    }

    /// New ciphertext on `connection`: into the session, through the handshake, and out as
    /// plaintext messages, for as long as the stream's input holds more and the session takes
    /// it. The session's buffer may be full on entry (the connection waited for room for an
    /// answer): its records are read first, and then it takes the rest, since an input the
    /// engine stopped reading brings no further event.
    func tlsData(_ connection: Int) {
        guard case .tls(let tls, let plaintext) = connections[connection].security else { return }
        let stream = connections[connection].stream
        if !tls.isEstablished {
            // A handshake step may sign (a millisecond for RSA): past this turn's budget the
            // connection waits for the next turn, its bytes kept in the engine, so a wave of
            // clients connecting cannot hold up the datagrams between turns.
            guard handshakeBudget > 0 else {
                if connections[connection].reading != .handshakeDeferred {
                    connections[connection].reading = .handshakeDeferred
                    deferredHandshakes.append(Int32(connection))
                }
                return
            }
            handshakeBudget -= 1
        }
        var tookBefore = true
        while connections[connection].isOpen {
            let input = engine.input(stream)
            if !connections[connection].helloSizeChecked {
                switch ClientHelloSize.verdict(input) {
                case .wait: return
                case .tooLarge:
                    transportCounters.handshakesFailed[HandshakeFailure.protocolError.rawValue] &+= 1
                    return close(connection, .tlsError)
                case .acceptable: connections[connection].helloSizeChecked = true
                }
            }
            let taken = input.count > 0 ? tls.receiveCiphertext(input) : 0
            engine.consume(stream, taken)
            if !tls.isEstablished {
                switch tls.handshake() {
                case .failed(let failure):
                    transportCounters.handshakesFailed[(failure == .notTLS ? HandshakeFailure.notTLS : .protocolError).rawValue] &+= 1
                    sendCiphertext(connection)  // the alert, if the library made one
                    return close(connection, failure == .notTLS ? .notTLS : .tlsError)
                case .inProgress:
                    sendCiphertext(connection)
                    if taken == 0 { return }
                    continue
                case .done:
                    transportCounters.handshakesCompleted &+= 1
                    sendCiphertext(connection)
                    engine.setDeadline(stream, clock.now &+ settings.streamLimits.firstMessageNanoseconds)
                }
            }
            guard readPlaintext(connection, tls, plaintext) else { return }
            // Read out now, the session has room: stop only when the input is used up, or
            // when even so it took nothing twice running.
            if engine.input(stream).count == 0 || (taken == 0 && !tookBefore) { return }
            tookBefore = taken > 0
        }
    }

    /// Decrypts what the session holds into the connection's buffer and handles the whole
    /// messages there; false when the connection closed or waits for room for an answer.
    private func readPlaintext(_ connection: Int, _ tls: TLSSession, _ plaintext: PlaintextBuffer) -> Bool {
        // Messages left whole in the buffer while the output had no room for their answers.
        guard handleHeld(connection, plaintext) else { return false }
        while true {
            if plaintext.space.count == 0 {
                // Full with part of one message: room for the whole of it, if it may be that long.
                guard case .incomplete = StreamFrame.front(of: plaintext.held, maximum: TurnStreamLimits.maxMessage),
                      plaintext.reserve(PlaintextBuffer.maxCapacity) else {
                    close(connection, .framing)
                    return false
                }
            }
            switch tls.readPlaintext(into: plaintext.space) {
            case .bytes(let count):
                plaintext.count += count
                guard handleHeld(connection, plaintext) else { return false }
            case .wantMore:
                sendCiphertext(connection)
                return true
            case .closed:
                close(connection, .peerClosed)
                return false
            case .failed:
                close(connection, .tlsError)
                return false
            }
        }
    }

    /// Handles the whole messages in `connection`'s plaintext and drops them from it; false
    /// when the connection closed or waits for room for an answer.
    private func handleHeld(_ connection: Int, _ plaintext: PlaintextBuffer) -> Bool {
        guard plaintext.count > 0 else { return true }
        let (used, failure) = messages(connection, plaintext.held, reusedBeforeFlush: true)
        guard connections[connection].isOpen else { return false }
        plaintext.consume(used)
        if failure != nil {
            close(connection, .framing)
            return false
        }
        return connections[connection].reading != .waitingForRoom
    }

    /// Encrypts one whole message for `connection` if its output has room for the record
    /// within `bound`: a client that does not read loses datagrams, and the session is never
    /// left with a record the stream could not take.
    func sendTLS(_ connection: Int, _ bytes: UnsafeRawBufferPointer, bound: Int) -> Bool {
        guard let tls = connections[connection].tls, tls.isEstablished else { return false }
        let stream = connections[connection].stream
        let pending = engine.outputPending(stream) + tls.pendingCiphertext
        guard pending + TLSRecord.ciphertextBound(plaintextBytes: bytes.count) <= bound,
              tls.writePlaintext(bytes) else { return false }
        sendCiphertext(connection)
        return true
    }

    /// Moves the session's ciphertext into the stream's output, as much as the stream takes;
    /// the rest stays in the session until the stream has room (`writable`).
    func sendCiphertext(_ connection: Int) {
        guard let tls = connections[connection].tls else { return }
        let stream = connections[connection].stream
        while tls.pendingCiphertext > 0 {
            let room = engine.configuration.streamHighWater - engine.outputPending(stream)
            guard room > 0 else { return }
            let chunk = UnsafeMutableRawBufferPointer(rebasing: cipherScratch.bytes[0..<min(room, cipherScratch.bytes.count)])
            let count = tls.takeCiphertext(into: chunk)
            guard count > 0, engine.write(stream, UnsafeRawBufferPointer(rebasing: chunk[0..<count])) else { return }
        }
    }
}

extension TurnStreamClients {
    /// A new turn's stream work: the budget again, and first the handshakes put off last turn.
    func beginTurn() {
        handshakeBudget = settings.streamLimits.handshakesPerTurn
        guard !deferredHandshakes.isEmpty else { return }
        let waiting = deferredHandshakes
        deferredHandshakes.removeAll(keepingCapacity: true)
        for connection in waiting.map(Int.init) where connections[connection].isLive && connections[connection].reading == .handshakeDeferred {
            connections[connection].reading = .ready
            tlsData(connection)
        }
    }

    /// Whether handshakes wait for the next turn (which must then not sleep).
    var hasDeferredWork: Bool { !deferredHandshakes.isEmpty }
}

/// The size a TLS client's first handshake message claims, read from its record and handshake
/// headers before the library buffers any of it: the library would hold a ClientHello of up to
/// 128 KiB per connection before a client has proved anything, so a few thousand connections
/// sending large ones would hold hundreds of megabytes. Real ClientHellos are a few KiB
/// (post-quantum key shares and ECH included); past `maximum` the connection closes.
enum ClientHelloSize {
    static let maximum = 16_384

    enum Verdict { case wait, tooLarge, acceptable }

    static func verdict(_ input: UnsafeRawBufferPointer) -> Verdict {
        guard input.count > 0 else { return .wait }
        // Not a handshake record, or not a ClientHello: the library refuses it at once.
        guard input[0] == 0x16 else { return .acceptable }
        guard input.count >= 9 else { return .wait }
        guard input[5] == 0x01 else { return .acceptable }
        let length = Int(input[6]) << 16 | Int(input[7]) << 8 | Int(input[8])
        return length > maximum ? .tooLarge : .acceptable
    }
}
