import Foundation
import Glibc
import TestSupport
import TLS

/// A TLS session carried over a connected blocking socket: what a worker does with its engine,
/// done with plain calls so a session can meet openssl's own client and server on real TCP.
/// Owns `fd` and closes it.
final class SocketSessionHarness {
    let session: TLSSession
    let fd: Int32
    /// Plaintext read so far and not yet taken.
    private(set) var plaintext: [UInt8] = []
    /// How reading ended (`.closed` or `.failed`), once it has.
    private(set) var readEnd: TLSRead?
    /// Bytes from the socket the session has not taken yet (its buffer was full).
    private var unfed: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 32 << 10)

    init(session: TLSSession, fd: Int32) {
        self.session = session
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// Sends all the ciphertext the session has waiting; false when the connection is gone.
    @discardableResult
    func flush() -> Bool {
        while session.pendingCiphertext > 0 {
            let taken = scratch.withUnsafeMutableBytes { session.takeCiphertext(into: $0) }
            guard scratch.withUnsafeBytes({ LoopbackTCP.sendAll(fd, UnsafeRawBufferPointer(rebasing: $0[0..<taken])) }) else { return false }
        }
        return true
    }

    /// Drives the handshake until it is done or failed (sending any alert), or `seconds` pass.
    func handshake(seconds: Double) -> TLSHandshakeStep {
        let deadline = Date().addingTimeInterval(seconds)
        var step = session.handshake()
        while step == .inProgress {
            flush()
            guard turn(until: deadline) else { break }
            step = session.handshake()
        }
        flush()
        return step
    }

    /// Reads, decrypts and answers (handshake flights, alerts) until `done(plaintext)` holds,
    /// reading ends, the peer goes, or `seconds` pass; returns whether `done` held.
    func read(seconds: Double, until done: ([UInt8]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !done(plaintext) && readEnd == nil {
            guard turn(until: deadline) else { break }
        }
        return done(plaintext)
    }

    /// The plaintext read so far; it is cleared.
    func takePlaintext() -> [UInt8] {
        defer { plaintext.removeAll() }
        return plaintext
    }

    /// Encrypts and sends `bytes`; false when the session refused them or the peer is gone.
    func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { session.writePlaintext($0) } && flush()
    }

    /// Waits for the socket until `deadline`, then feeds what came to the session, reading
    /// plaintext as it goes. False when nothing came in time or the peer closed the socket.
    func turn(until deadline: Date) -> Bool {
        guard LoopbackTCP.waitReadable(fd, seconds: max(0, deadline.timeIntervalSinceNow)) else { return false }
        let received = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard received > 0 else { return false }
        unfed += scratch[0..<received]
        while !unfed.isEmpty {
            let taken = unfed.withUnsafeBytes { session.receiveCiphertext($0) }
            unfed.removeFirst(taken)
            if session.isEstablished || session.handshake() == .done { readAvailable() }
            flush()
            if taken == 0 && session.pendingCiphertext == 0 { break }
        }
        return true
    }

    private func readAvailable() {
        while readEnd == nil {
            let read = scratch.withUnsafeMutableBytes { session.readPlaintext(into: $0) }
            switch read {
            case .bytes(let count): plaintext += scratch[0..<count]
            case .wantMore: return
            case .closed, .failed: readEnd = read
            }
        }
    }
}
