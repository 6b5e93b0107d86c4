import ClientSockets
import Glibc
import SystemSupport
import TLS

/// A client's TLS over one non-blocking TCP socket: the TLS module's session (OpenSSL over
/// memory, as the relay's own connections use it) with the socket I/O around it. Ciphertext the
/// session seals leaves through a fixed staging buffer, and what the socket does not take now
/// stays there, in order, for the next `flush`; what the socket gives waits in a second fixed
/// buffer until the session takes it. Both buffers are allocated once, in `init`.
///
/// One user at a time (the session is not thread-safe): TurnConnector during the handshake,
/// then TurnStreamConnection under its output lock. Owns neither the socket nor its closing.
package final class TLSOverSocket {
    let session: TLSSession
    private let fd: Int32
    /// Sealed ciphertext `sentUpTo..<sealedUpTo` is not yet taken by the kernel.
    private let outbound: UnsafeMutableRawBufferPointer
    private var sentUpTo = 0
    private var sealedUpTo = 0
    /// Received ciphertext `takenUpTo..<receivedUpTo` is not yet taken by the session.
    private let inbound: UnsafeMutableRawBufferPointer
    private var takenUpTo = 0
    private var receivedUpTo = 0

    enum Sent: Equatable {
        /// Nothing waits to be sent.
        case done
        /// The socket takes no more now: wait for POLLOUT.
        case wouldBlock
        case failed(String)
    }

    enum Received: Equatable {
        /// The session took ciphertext: read or handshake again.
        case fed
        /// Nothing new now: wait for POLLIN.
        case wouldBlock
        /// The server closed the connection (without close_notify, or the reader would have
        /// seen it).
        case closed
        case failed(String)
    }

    /// A client session for `host` (SNI for a name; with a CA, the certificate must name it).
    init(fd: Int32, context: TLSClientContext, host: String) throws(LoadError) {
        do {
            session = try TLSSession(client: context, serverName: host)
        } catch {
            throw LoadError("TLS: setting up a session for \(host): \(error)")
        }
        self.fd = fd
        let bytes = 20 << 10
        outbound = .allocate(byteCount: bytes, alignment: 16)
        inbound = .allocate(byteCount: bytes, alignment: 16)
    }

    deinit {
        outbound.deallocate()
        inbound.deallocate()
    }

    /// The client settings of a run's TURN over TLS (`--turn-transport tls`): ALPN "stun.turn"
    /// offered (RFC 7443), TLS 1.2 or 1.3; like coturn's turnutils_uclient the server's
    /// certificate is not checked unless a CA file is given (`--tls-ca`), and then the chain must
    /// lead to that CA and the certificate must name the host the clients were pointed at.
    static func context(caFile: String?) throws(LoadError) -> TLSClientContext {
        do {
            return try TLSClientContext(trusting: caFile, alpn: ["stun.turn"])
        } catch {
            throw LoadError(caFile.map { "--tls-ca \($0): \(error)" } ?? "TLS: \(error)")
        }
    }

    /// Whether ciphertext still waits to leave (staged here or sealed in the session).
    var hasUnsent: Bool { sentUpTo < sealedUpTo || session.pendingCiphertext > 0 }

    /// Whether input waits that poll cannot see: received ciphertext the session has not taken.
    var hasUntakenInput: Bool { takenUpTo < receivedUpTo }

    /// Sends what waits, staged first, as far as the socket takes it now.
    func flush() -> Sent {
        while true {
            if sentUpTo == sealedUpTo {
                sentUpTo = 0
                sealedUpTo = session.takeCiphertext(into: outbound)
                if sealedUpTo == 0 { return .done }
            }
            let outcome = SystemCall.outcome {
                send(fd, outbound.baseAddress! + sentUpTo, sealedUpTo - sentUpTo, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            switch outcome {
            case .done(let count): sentUpTo += count
            case .wouldBlock: return .wouldBlock
            case .failed(let code): return .failed(errnoText(code))
            }
        }
    }

    /// Gives the session received ciphertext, reading the socket once when none is left.
    func fill() -> Received {
        if takenUpTo == receivedUpTo {
            switch SystemCall.outcome({ recv(fd, inbound.baseAddress, inbound.count, Int32(MSG_DONTWAIT)) }) {
            case .done(0): return .closed
            case .done(let count):
                takenUpTo = 0
                receivedUpTo = count
            case .wouldBlock: return .wouldBlock
            case .failed(let code): return .failed(errnoText(code))
            }
        }
        let taken = session.receiveCiphertext(UnsafeRawBufferPointer(rebasing: inbound[takenUpTo..<receivedUpTo]))
        takenUpTo += taken
        // Taking nothing means the session's own buffer is full: what it holds must be read first.
        return taken > 0 ? .fed : .wouldBlock
    }

    /// Why the handshake failed, as a user reads it: the certificate check's verdict when that
    /// was it, else the library's reasons.
    var handshakeFailure: String {
        if let verdict = session.certificateVerdict { return "certificate not accepted: \(verdict)" }
        return session.failureDetail ?? "the session failed"
    }
}
