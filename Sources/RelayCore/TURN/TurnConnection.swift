import DatagramEngine
import NetAddress
import STUN
import TLS

/// One TURN client over TCP or TLS: its stream in the engine and, over TLS, its session and
/// the decrypted bytes not yet cut into messages. Lives in its worker's TurnTable only; set
/// up at accept, so the messages that follow allocate nothing.
struct TurnConnection {
    var stream: SocketID
    var peer: Endpoint
    var transport: TurnTransport
    /// Over TLS: the session (its context is the one in force when the client connected).
    var tls: TLSSession?
    var plaintext: PlaintextBuffer?
    /// A valid message has arrived (the first-message deadline is over).
    var spoke = false
    /// The client has an allocation: the connection lives as long as it, with no idle deadline.
    var allocated = false
    /// The relay closed it (counted then): its `closed` event is not counted again.
    var closing = false
    /// Its handshake waits in `TurnTable.deferredHandshakes` for the next turn's budget.
    var deferred = false
    /// A request waits at the front of its input until the output has room for the answer;
    /// the engine's `writable` event resumes it.
    var waitingForRoom = false
    /// False for `vacant`, the filler of an index whose connection is gone.
    var live = true

    /// A computed value, not a stored static: a `TLSSession` is not Sendable.
    static var vacant: TurnConnection {
        TurnConnection(stream: SocketID(slot: -1, generation: 0), peer: Endpoint(high: 0, low: 0, port: 0), transport: .tcp, live: false)
    }

    /// The client as the TURN table knows it: the stream is its 5-tuple.
    func client(_ index: Int) -> TurnClient {
        TurnClient(listener: stream, address: peer, connection: Int32(index))
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
