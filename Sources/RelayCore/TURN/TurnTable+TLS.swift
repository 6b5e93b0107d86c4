import DatagramEngine
import STUN
import TLS

/// TURN over TLS (`turns:`): the connection's ciphertext comes from and goes to its stream in
/// the engine, and the library sees only memory (`TLSSession`'s BIO pair), so the worker never
/// blocks in it. Decrypted bytes collect in the connection's `PlaintextBuffer` until they
/// make whole messages, which are handled exactly as over TCP.
extension TurnTable {
    /// A session with the context in force now (SIGHUP may have replaced it since the last).
    func newTLSSession() -> TLSSession? {
        guard let context = shared.tlsContext else { return nil }
        return try? TLSSession(server: context)
    }

    /// New ciphertext on connection `c`: into the session, through the handshake, and out as
    /// plaintext messages, for as long as the stream's input holds more and the session takes
    /// it. The session's buffer may be full on entry (the connection waited for room for an
    /// answer): its records are read first, and then it takes the rest, since an input the
    /// engine stopped reading brings no further event.
    func tlsData(_ c: Int) {
        guard let tls = connections[c].tls, let plaintext = connections[c].plaintext else { return }
        let stream = connections[c].stream
        if !tls.isEstablished {
            // A handshake step may sign (a millisecond for RSA): past this turn's budget the
            // connection waits for the next turn, its bytes kept in the engine, so a wave of
            // clients connecting cannot hold up the datagrams between turns.
            guard handshakeBudget > 0 else {
                if !connections[c].deferred {
                    connections[c].deferred = true
                    deferredHandshakes.append(Int32(c))
                }
                return
            }
            handshakeBudget -= 1
        }
        var tookBefore = true
        while connections[c].live && !connections[c].closing {
            let input = engine.input(stream)
            let taken = input.count > 0 ? tls.receiveCiphertext(input) : 0
            engine.consume(stream, taken)
            if !tls.isEstablished {
                switch tls.handshake() {
                case .failed(let failure):
                    transportCounters.handshakesFailed[(failure == .notTLS ? HandshakeFailure.notTLS : .protocolError).rawValue] &+= 1
                    sendCiphertext(c)  // the alert, if the library made one
                    return close(c, failure == .notTLS ? .notTLS : .tlsError)
                case .inProgress:
                    sendCiphertext(c)
                    if taken == 0 { return }
                    continue
                case .done:
                    transportCounters.handshakesCompleted &+= 1
                    sendCiphertext(c)
                    engine.setDeadline(stream, now &+ settings.streamLimits.firstMessageNanoseconds)
                }
            }
            guard readPlaintext(c, tls, plaintext) else { return }
            // Read out now, the session has room: stop only when the input is used up, or
            // when even so it took nothing twice running.
            if engine.input(stream).count == 0 || (taken == 0 && !tookBefore) { return }
            tookBefore = taken > 0
        }
    }

    /// Decrypts what the session holds into the connection's buffer and handles the whole
    /// messages there; false when the connection closed or waits for room for an answer.
    func readPlaintext(_ c: Int, _ tls: TLSSession, _ plaintext: PlaintextBuffer) -> Bool {
        // Messages left whole in the buffer while the output had no room for their answers.
        guard handleHeld(c, plaintext) else { return false }
        while true {
            if plaintext.space.count == 0 {
                // Full with part of one message: room for the whole of it, if it may be that long.
                guard case .incomplete = StreamFrame.front(of: plaintext.held, maximum: TurnStreamLimits.maxMessage),
                      plaintext.reserve(PlaintextBuffer.maxCapacity) else {
                    close(c, .framing)
                    return false
                }
            }
            switch tls.readPlaintext(into: plaintext.space) {
            case .bytes(let count):
                plaintext.count += count
                guard handleHeld(c, plaintext) else { return false }
            case .wantMore:
                sendCiphertext(c)
                return true
            case .closed:
                close(c, .peerClosed)
                return false
            case .failed:
                close(c, .tlsError)
                return false
            }
        }
    }

    /// Handles the whole messages in connection `c`'s plaintext and drops them from it; false
    /// when the connection closed or waits for room for an answer.
    func handleHeld(_ c: Int, _ plaintext: PlaintextBuffer) -> Bool {
        guard plaintext.count > 0 else { return true }
        let (used, failure) = messages(c, plaintext.held, reusedBeforeFlush: true)
        guard connections[c].live && !connections[c].closing else { return false }
        plaintext.consume(used)
        if failure != nil {
            close(c, .framing)
            return false
        }
        return !connections[c].waitingForRoom
    }

    /// Encrypts one whole message for connection `c` if its output has room for the record
    /// within `bound`: a client that does not read loses datagrams, and the session is never
    /// left with a record the stream could not take.
    func toTLS(_ c: Int, _ bytes: UnsafeRawBufferPointer, bound: Int) -> Bool {
        guard let tls = connections[c].tls, tls.isEstablished else { return false }
        let stream = connections[c].stream
        let pending = engine.outputPending(stream) + tls.pendingCiphertext
        guard pending + TLSRecord.ciphertextBound(plaintextBytes: bytes.count) <= bound,
              tls.writePlaintext(bytes) else { return false }
        sendCiphertext(c)
        return true
    }

    /// Moves the session's ciphertext into the stream's output, as much as the stream takes;
    /// the rest stays in the session until the stream has room (`writable`).
    func sendCiphertext(_ c: Int) {
        guard let tls = connections[c].tls else { return }
        let stream = connections[c].stream
        while tls.pendingCiphertext > 0 {
            let room = engine.configuration.streamHighWater - engine.outputPending(stream)
            guard room > 0 else { return }
            let chunk = UnsafeMutableRawBufferPointer(rebasing: cipherScratch.bytes[0..<min(room, cipherScratch.bytes.count)])
            let count = tls.takeCiphertext(into: chunk)
            guard count > 0, engine.write(stream, UnsafeRawBufferPointer(rebasing: chunk[0..<count])) else { return }
        }
    }
}

extension TurnTable {
    /// A new turn's stream work: the budget again, and first the handshakes put off last turn.
    func beginStreamTurn() {
        handshakeBudget = settings.streamLimits.handshakesPerTurn
        guard !deferredHandshakes.isEmpty else { return }
        let waiting = deferredHandshakes
        deferredHandshakes.removeAll(keepingCapacity: true)
        for c in waiting.map(Int.init) where connections[c].live && connections[c].deferred {
            connections[c].deferred = false
            tlsData(c)
        }
    }

    /// Whether handshakes wait for the next turn (which must then not sleep).
    var hasDeferredStreamWork: Bool { !deferredHandshakes.isEmpty }
}
