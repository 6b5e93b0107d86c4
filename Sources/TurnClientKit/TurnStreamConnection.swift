import ClientSockets
import CLoadGen
import Glibc
import Synchronization
import SystemSupport
import TLS

/// One TURN client's connection to its server over TCP, or TLS over TCP (`--turn-transport
/// tcp|tls`): the connection is the client's 5-tuple, so it carries the client's requests and
/// its data, framed on the byte stream (`StreamFramer` on the way in; ChannelData padded to 4
/// on the way out, RFC 8656 section 12.5).
///
/// Threads: the sending thread writes data, the control thread writes requests (refreshes
/// during the run), and one reader at a time (the control thread before and after the run,
/// the receiving thread during it) reads. Writes go through one lock per connection, so that
/// a message is never interleaved with another and one left half-written by a full socket is
/// finished before the next. A TLS session has one user at a time, so with TLS the reads take
/// the same lock, per read. Nothing is allocated per message: the output buffer, the framer's
/// input buffer and TLS's staging buffers (TLSOverSocket) are allocated once, when the
/// connection opens.
///
/// A connection that fails (closed or reset by the server, a framing or TLS error) stays
/// failed, with its first reason in `failure`; its client counts as failed. The descriptor
/// is closed and the session freed in deinit (after a close_notify, if the connection works).
package final class TurnStreamConnection: @unchecked Sendable {
    package let fd: Int32
    package let server: SocketAddress
    /// The host as the user named the server (TLS: SNI and the certificate's name).
    package let host: String
    /// The TLS settings the connection was opened with (a client following a 300 reuses
    /// them); nil for TCP.
    package let context: TLSClientContext?
    /// nil for TCP; with TLS, used only under `output`'s lock.
    private let tls: TLSOverSocket?
    /// The reader's side; one thread at a time (see above).
    let framer: StreamFramer
    private let buffer: UnsafeMutableRawPointer
    package let outputCapacity: Int
    /// Bytes `start..<end` of `buffer` are written by the caller and not yet taken by the
    /// kernel (TCP) or sealed by the session (TLS).
    private struct Output {
        var start = 0
        var end = 0
    }
    private let output = Mutex(Output())
    private let failed = Atomic<Bool>(false)
    private let reason = Mutex<String?>(nil)

    /// Reads per `receive` call before giving other connections their turn (TLS goes on while
    /// the library holds decrypted bytes that poll cannot see).
    static let readsPerTurn = 16

    /// Takes ownership of `fd`, a connected non-blocking TCP socket, and of `tls`, a session
    /// over it whose handshake is done (under `context`).
    package init(fd: Int32, tls: TLSOverSocket?, server: SocketAddress, host: String, context: TLSClientContext?,
         inputCapacity: Int, outputCapacity: Int) {
        self.fd = fd
        self.tls = tls
        self.server = server
        self.host = host
        self.context = context
        framer = StreamFramer(capacity: inputCapacity)
        self.outputCapacity = outputCapacity
        buffer = .allocate(byteCount: outputCapacity, alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: outputCapacity)
    }

    deinit {
        if let tls, !isFailed {
            // close_notify if the socket takes it now; a failed connection gets none.
            tls.session.shutdown()
            _ = tls.flush()
        }
        SystemCall.close(fd)
        buffer.deallocate()
    }

    var isFailed: Bool { failed.load(ordering: .acquiring) }

    /// Why the connection failed, nil while it works.
    package var failure: String? { reason.withLock { $0 } }

    /// Marks the connection failed; the first reason stays.
    package func fail(_ why: String) {
        reason.withLock { if $0 == nil { $0 = why } }
        failed.store(true, ordering: .releasing)
    }

    // MARK: writing

    /// Queues one whole message (a request) and sends what the socket takes. False when the
    /// connection has failed or its output has no room.
    package func send(_ message: UnsafeRawBufferPointer) -> Bool {
        guard !isFailed else { return false }
        return output.withLock { out in
            guard reserve(&out, message.count) else { return false }
            (buffer + out.end).copyMemory(from: message.baseAddress!, byteCount: message.count)
            out.end += message.count
            flush(&out)
            return !isFailed
        }
    }

    /// Queues one generated datagram, `header` first, `size` bytes in all, framed by `framing`
    /// and padded as a stream needs; sends what the socket takes. False when the connection
    /// has failed or its output has no room (the datagram is dropped, not sent).
    @inline(__always)
    package func send(header: PayloadHeader, size: Int, framing: TurnFraming) -> Bool {
        guard !isFailed else { return false }
        return output.withLock { out in
            let payload = max(size, PayloadHeader.size)
            let total = framing.headerSize + payload + framing.padding(payload, stream: true)
            guard reserve(&out, total) else { return false }
            let at = buffer + out.end
            framing.write(into: at, payload: payload, stream: true)
            header.encode(into: at + framing.headerSize)
            out.end += total
            flush(&out)
            return !isFailed
        }
    }

    /// Sends what is queued, as far as the socket takes it now. True when nothing is left.
    @discardableResult
    package func flushPending() -> Bool {
        guard !isFailed else { return true }
        return output.withLock { out in
            flush(&out)
            return (out.start == out.end && tls?.hasUnsent != true) || isFailed
        }
    }

    /// Room for `count` more bytes at `end`, moving what is queued to the front if need be.
    private func reserve(_ out: inout Output, _ count: Int) -> Bool {
        if out.end + count <= outputCapacity { return true }
        guard out.end - out.start + count <= outputCapacity else { return false }
        buffer.copyMemory(from: buffer + out.start, byteCount: out.end - out.start)
        out.end -= out.start
        out.start = 0
        return true
    }

    private func flush(_ out: inout Output) {
        if let tls { return flush(&out, over: tls) }
        while out.start < out.end {
            let outcome = SystemCall.outcome {
                Glibc.send(fd, buffer + out.start, out.end - out.start, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            switch outcome {
            case .done(let n): out.start += n
            case .wouldBlock: return
            case .failed(let code):
                fail("send to \(server): \(errnoText(code))")
                return
            }
        }
        out.start = 0
        out.end = 0
    }

    /// Seals what is queued a record at a time, sending each before the next so the session's
    /// buffer always has room for a whole record.
    private func flush(_ out: inout Output, over tls: TLSOverSocket) {
        while true {
            switch tls.flush() {
            case .done: break
            case .wouldBlock: return
            case .failed(let why):
                fail("TLS write to \(server): \(why)")
                return
            }
            guard out.start < out.end else {
                out.start = 0
                out.end = 0
                return
            }
            let length = min(out.end - out.start, TLSRecord.maximumPlaintextPerRecord)
            guard tls.session.writePlaintext(UnsafeRawBufferPointer(start: buffer + out.start, count: length)) else {
                fail("TLS write to \(server): \(tls.session.failureDetail ?? "the session refused \(length) bytes")")
                return
            }
            out.start += length
        }
    }

    // MARK: reading

    /// Reads what the server sent, as far as the socket has it now (at most `readsPerTurn`
    /// reads), handing every whole message to `body` in order. False once the connection has
    /// failed: closed or reset by the server, a framing error or a TLS error (`failure`).
    @inline(__always)
    package func receive(_ body: (FramedMessage) -> Void) -> Bool {
        guard !isFailed else { return false }
        var reads = 0
        while true {
            let space = framer.space
            var count = 0
            if let tls {
                switch output.withLock({ _ in read(into: space, from: tls) }) {
                case .bytes(let n): count = n
                case .nothing: return true
                case .ended(let why):
                    fail(why)
                    return false
                }
            } else {
                switch SystemCall.outcome({ recv(fd, space.baseAddress, space.count, Int32(MSG_DONTWAIT)) }) {
                case .done(0):
                    fail("closed by the server")
                    return false
                case .done(let n): count = n
                case .wouldBlock: return true
                case .failed(let code):
                    fail("recv from \(server): \(errnoText(code))")
                    return false
                }
            }
            framer.didRead(count)
            do {
                while let frame = try framer.next() { body(frame) }
            } catch {
                fail(error.reason)
                return false
            }
            reads += 1
            if reads >= Self.readsPerTurn {
                // Input the session holds is invisible to poll: read it now.
                guard let tls, output.withLock({ _ in tls.hasUntakenInput || tls.session.hasUnreadInput }) else { return true }
            }
        }
    }

    private enum Input {
        case bytes(Int)
        /// Nothing more now: wait for the socket.
        case nothing
        case ended(String)
    }

    /// Plaintext from the session into `space`, feeding it what the socket has until it gives
    /// some or the socket has no more; what reading made the session send (an answer to a
    /// KeyUpdate) goes out too.
    private func read(into space: UnsafeMutableRawBufferPointer, from tls: TLSOverSocket) -> Input {
        defer { _ = tls.flush() }
        while true {
            switch tls.session.readPlaintext(into: space) {
            case .bytes(let n): return .bytes(n)
            case .closed: return .ended("closed by the server (TLS close_notify)")
            case .failed: return .ended("TLS read from \(server): \(tls.session.failureDetail ?? "failed")")
            case .wantMore: break
            }
            switch tls.fill() {
            case .fed: continue
            case .wouldBlock: return .nothing
            case .closed: return .ended("TLS read from \(server): the server closed the connection without close_notify")
            case .failed(let why): return .ended("TLS read from \(server): \(why)")
            }
        }
    }
}
