import DatagramEngine
import NetAddress
import STUN
import TLS

/// One TURN client over TCP or TLS: its stream in the engine, its security (plain, or a TLS
/// session with the decrypted bytes not yet cut into messages) and where it is in its life.
/// Lives in its worker's `TurnStreamClients` only; set up at accept, so the messages that
/// follow allocate nothing.
struct TurnConnection {
    /// Where a connection is in its life; each phase rules out what cannot go with it (an
    /// allocation on a connection that never sent a message, an idle deadline with one).
    enum Phase: Equatable {
        /// Accepted (over TLS, handshaking or done): no valid message yet, under the
        /// first-message deadline (after the handshake deadline over TLS).
        case awaitingFirstMessage
        /// It has sent a valid message but holds no allocation: the idle deadline runs.
        case spoken
        /// It holds an allocation and lives as long as that, with no deadline of its own.
        case allocated
        /// The relay is closing it (counted then): its `closed` event is not counted again.
        /// Bytes that arrived before the close are still cut into messages, by the rules of
        /// a client that had spoken or not.
        case closing(afterSpeaking: Bool)
        /// The filler of an index whose connection is gone.
        case vacant
    }

    /// Whether its input is read now.
    enum Reading: Equatable {
        case ready
        /// A request waits at the front of its input until the output has room for the
        /// answer; the engine's `writable` event resumes it.
        case waitingForRoom
        /// Its TLS handshake waits in `TurnStreamClients.deferredHandshakes` for the next
        /// turn's budget.
        case handshakeDeferred
    }

    /// A stream's security: plain TCP, or TLS with the session (its context the one in force
    /// when the client connected) and the decrypted bytes not yet cut into messages.
    enum Security {
        case plain
        case tls(TLSSession, PlaintextBuffer)
    }

    /// The client's stream in the engine (a registry entry of kind stream).
    var stream: SocketID
    var peer: Endpoint
    var security: Security
    var phase = Phase.awaitingFirstMessage
    var reading = Reading.ready
    /// Over TLS, whether the first handshake message's size has been read (`ClientHelloSize`).
    var helloSizeChecked = false

    init(stream: SocketID, peer: Endpoint, security: Security) {
        self.stream = stream
        self.peer = peer
        self.security = security
    }

    /// A computed value, not a stored static: a `TLSSession` is not Sendable.
    static var vacant: TurnConnection {
        var vacant = TurnConnection(stream: SocketID(slot: -1, generation: 0), peer: Endpoint(high: 0, low: 0, port: 0), security: .plain)
        vacant.phase = .vacant
        return vacant
    }

    var transport: TurnTransport {
        if case .tls = security { .tls } else { .tcp }
    }

    /// The TLS session, over TLS.
    var tls: TLSSession? {
        if case .tls(let session, _) = security { session } else { nil }
    }

    /// An entry in use, closing or not.
    var isLive: Bool { phase != .vacant }
    /// In use and not closing: it reads, and takes messages.
    var isOpen: Bool {
        switch phase {
        case .awaitingFirstMessage, .spoken, .allocated: true
        case .closing, .vacant: false
        }
    }

    /// A valid message has arrived (the first-message deadline is over).
    var hasSpoken: Bool {
        switch phase {
        case .spoken, .allocated, .closing(afterSpeaking: true): true
        case .awaitingFirstMessage, .closing(afterSpeaking: false), .vacant: false
        }
    }

    /// The client as the TURN table knows it: the stream is its 5-tuple.
    func client(connectionIndex: Int) -> TurnClient {
        TurnClient(socket: stream, address: peer, connectionIndex: Int32(connectionIndex))
    }
}

/// The decrypted bytes of one TLS connection that do not yet make a whole message. Starts
/// small and grows, only when a message's header says it is longer, up to
/// `TurnStreamLimits.maxMessage` with padding: a connection sending the usual media messages
/// keeps a few kilobytes.
final class PlaintextBuffer {
    private(set) var bytes: UnsafeMutableRawBufferPointer
    /// Bytes held, from the start of `bytes`.
    var count = 0
    static let initialCapacity = 4096
    static let maxCapacity = TurnStreamLimits.inputBytes

    init() {
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: PlaintextBuffer.initialCapacity, alignment: 8)
    }

    deinit { bytes.deallocate() }

    var held: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[0..<count]) }
    var space: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: bytes[count...]) }

    /// Drops the first `used` bytes, moving the rest to the front.
    func consume(_ used: Int) {
        guard used > 0 else { return }
        let left = count - used
        if left > 0 { bytes.baseAddress!.copyMemory(from: bytes.baseAddress! + used, byteCount: left) }
        count = left
    }

    /// Makes room for a message that needs `capacity` bytes; false past the maximum.
    func reserve(_ capacity: Int) -> Bool {
        guard capacity > bytes.count else { return true }
        guard capacity <= PlaintextBuffer.maxCapacity else { return false }
        let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: PlaintextBuffer.maxCapacity, alignment: 8)
        if count > 0 { grown.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: count) }
        bytes.deallocate()
        bytes = grown
        return true
    }
}

/// A worker's scratch space for bytes on their way from one buffer to another (TLS records
/// from a session to a stream's output): allocated once, reused for every connection.
final class ScratchBytes {
    let bytes: UnsafeMutableRawBufferPointer

    init(capacity: Int) { bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8) }

    deinit { bytes.deallocate() }
}
