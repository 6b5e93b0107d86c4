import CSSL
import Glibc

/// One TLS connection's state machine, in memory only: it never touches a socket.
///
/// Ciphertext moves through a BIO pair with fixed buffers of `bufferBytes` each way, set up
/// once, and the library keeps its record buffers, so no buffer is allocated per record (OpenSSL
/// 3.0 still allocates and frees 40-byte bookkeeping inside each call: TLSAllocationTests).
/// The caller's loop:
/// `receiveCiphertext` what the network gave (it may take less when its buffer is full: keep
/// the rest); `handshake()` until `.done`, or `readPlaintext` until `.wantMore`; then send what
/// `takeCiphertext` gives (handshake flights, records, alerts), and repeat while it gave some.
/// WANT_READ and WANT_WRITE are states (`.inProgress`, `.wantMore`), never failures.
///
/// A failure is final and counted once by its `TLSFailure`; `failureDetail` says more for a
/// log line. Ciphertext the library queued before failing (an alert) can still be taken.
///
/// Not thread-safe: one owner (a worker) calls everything.
///
/// Memory, measured with the default 20 KiB buffers: about 50 KB before the handshake (the two
/// buffers and the library's state), about 90 KB once established (the library's own read and
/// write record buffers, about 17 KiB each, are kept for the session's life).
public final class TLSSession {
    /// The smallest `bufferBytes` taken. A handshake flight or a record larger than the
    /// buffer still passes (in parts), but a write is refused unless its whole ciphertext
    /// fits (`TLSRecord.ciphertextBound`): 20 KiB, the default, fits a full 16 KiB record.
    public static let minimumBufferBytes = 4096

    private let ssl: OpaquePointer
    /// Our half of the BIO pair: the network's ciphertext is written into it, ciphertext for
    /// the network is read out of it. Freed in deinit.
    private let network: OpaquePointer
    /// The library's half, owned by `ssl`: the room it can still write is the room left for
    /// outgoing ciphertext.
    private let libraryHalf: OpaquePointer
    private let isServer: Bool
    private var prefix = ClientHelloPrefix()
    private var established = false
    private var shutdownCalled = false
    /// close_notify could not be queued for lack of room; retried as ciphertext is taken.
    private var closeNotifyWaiting = false
    private var closeNotifyReceived = false
    private var failure: TLSFailure?

    /// Why the session failed, in one line for a log ("tlsv1 alert unknown ca"); nil until
    /// it has.
    public private(set) var failureDetail: String?

    /// A server session under `context`'s certificate; it waits for the client's hello.
    public convenience init(server context: TLSServerContext, bufferBytes: Int = 20 << 10) throws(TLSError) {
        try self.init(context: context.context, isServer: true, bufferBytes: bufferBytes)
    }

    /// A client session; its first `handshake()` produces the ClientHello. `serverName`: a
    /// host name is sent as SNI and, when the context has a CA file, checked against the
    /// certificate; an IP address is checked (not sent); nil checks the chain alone.
    public convenience init(client context: TLSClientContext, serverName: String?, bufferBytes: Int = 20 << 10) throws(TLSError) {
        try self.init(context: context.context, isServer: false, bufferBytes: bufferBytes)
        guard let serverName else { return }
        if Self.isIPAddress(serverName) {
            if context.verifiesServer, X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) != 1 {
                throw TLSError("TLS server address \(serverName) could not be set: \(ErrorQueue.summary(ErrorQueue.take()))")
            }
        } else {
            guard mr_ssl_set_host_name(ssl, serverName) == 1,
                  !context.verifiesServer || SSL_set1_host(ssl, serverName) == 1 else {
                throw TLSError("TLS server name \(serverName) could not be set: \(ErrorQueue.summary(ErrorQueue.take()))")
            }
        }
    }

    private init(context: OpaquePointer, isServer: Bool, bufferBytes: Int) throws(TLSError) {
        guard bufferBytes >= Self.minimumBufferBytes else {
            throw TLSError("TLS buffer of \(bufferBytes) bytes is below the minimum of \(Self.minimumBufferBytes)")
        }
        ErrorQueue.clear()
        guard let ssl = SSL_new(context) else {
            throw TLSError("TLS session could not be made: \(ErrorQueue.summary(ErrorQueue.take()))")
        }
        var libraryHalf: OpaquePointer?
        var network: OpaquePointer?
        guard BIO_new_bio_pair(&libraryHalf, bufferBytes, &network, bufferBytes) == 1, let libraryHalf, let network else {
            SSL_free(ssl)
            throw TLSError("TLS buffers of \(bufferBytes) bytes could not be made: \(ErrorQueue.summary(ErrorQueue.take()))")
        }
        // One BIO as both ends: the SSL takes the one reference and frees it with itself.
        SSL_set_bio(ssl, libraryHalf, libraryHalf)
        if isServer { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
        self.ssl = ssl
        self.network = network
        self.libraryHalf = libraryHalf
        self.isServer = isServer
    }

    deinit {
        SSL_free(ssl)
        BIO_free(network)
    }

    // MARK: Ciphertext in and out

    /// Ciphertext from the network into the session. Returns how many bytes it took: fewer
    /// than given when its buffer is full (the caller keeps the rest for later, e.g. does not
    /// `consume` it). On a server the first bytes are judged before the library sees them:
    /// anything but a TLS handshake record fails the session as `.notTLS`. A failed session
    /// takes everything and discards it.
    public func receiveCiphertext(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard failure == nil else { return bytes.count }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        if isServer && prefix.verdict == .undecided {
            prefix.inspect(bytes)
            if prefix.verdict == .notTLS {
                let seen = prefix.seen.map { "0x" + String($0, radix: 16, uppercase: true) }.joined(separator: " ")
                fail(.notTLS, detail: "first bytes \(seen) are not a TLS handshake record")
                return bytes.count
            }
        }
        let room = min(Int(mr_bio_write_guarantee(network)), bytes.count, Int(Int32.max))
        guard room > 0 else { return 0 }
        return max(0, Int(BIO_write(network, base, Int32(room))))
    }

    /// Whether received input waits inside the session (ciphertext not yet decrypted, or
    /// plaintext not yet read): a loop that stops reading early must come back for it, as no
    /// socket will say so.
    public var hasUnreadInput: Bool {
        mr_bio_pending(libraryHalf) > 0 || SSL_has_pending(ssl) == 1
    }

    /// Bytes of ciphertext waiting for the network.
    public var pendingCiphertext: Int {
        Int(mr_bio_pending(network))
    }

    /// Moves up to `buffer.count` bytes of waiting ciphertext into `buffer` and returns how
    /// many; they leave the session.
    public func takeCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        let taken = max(0, Int(BIO_read(network, base, Int32(clamping: buffer.count))))
        if closeNotifyWaiting && taken > 0 && failure == nil { sendCloseNotify() }
        return taken
    }

    // MARK: Handshake

    /// Moves the handshake on with the ciphertext received so far. `.inProgress`: receive
    /// more, or take the ciphertext it produced and call again. Call after every
    /// `receiveCiphertext` until `.done`; the first call on a client produces its hello. After
    /// `.done`, read: application data may have come with the peer's last flight.
    public func handshake() -> TLSHandshakeStep {
        if let failure { return .failed(failure) }
        if established { return .done }
        ErrorQueue.clearStale()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            established = true
            return .done
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .inProgress
        case SSL_ERROR_ZERO_RETURN:
            return .failed(fail(.peerClosed, detail: "close_notify before the handshake was done"))
        default:
            return .failed(failFromLibrary())
        }
    }

    /// Whether the handshake is done and the session has not failed.
    public var isEstablished: Bool {
        established && failure == nil
    }

    // MARK: Plaintext

    /// Decrypts the next application bytes into `buffer`: `.bytes(n)` at its start (n > 0),
    /// `.wantMore` until more ciphertext is received, `.closed` once the peer's close_notify
    /// has come (answer with `shutdown()`), `.failed` when a record was refused. Post-handshake
    /// messages (TLS 1.3 session tickets) are handled on the way. Call until `.wantMore`: a
    /// buffer smaller than a record leaves the rest for the next call; an empty one reads
    /// nothing (`.wantMore`).
    public func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) -> TLSRead {
        if let failure { return .failed(failure) }
        if closeNotifyReceived { return .closed }
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return .wantMore }
        ErrorQueue.clearStale()
        let result = SSL_read(ssl, base, Int32(clamping: buffer.count))
        if result > 0 {
            established = true
            return .bytes(Int(result))
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            // WANT_WRITE: the library has something to send first (an answer to a KeyUpdate)
            // and no room: taking the ciphertext, as after every read, lets it go on.
            return .wantMore
        case SSL_ERROR_ZERO_RETURN:
            closeNotifyReceived = true
            return .closed
        default:
            return .failed(failFromLibrary())
        }
    }

    /// Encrypts all of `bytes` or nothing. Returns false, having written nothing, when the
    /// outgoing buffer lacks room for their whole ciphertext (`TLSRecord.ciphertextBound`:
    /// the caller drops and counts, or takes ciphertext and tries again), before the handshake
    /// is done, after `shutdown()` and after a failure. Empty `bytes` write nothing and succeed
    /// when a write could.
    public func writePlaintext(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard established, failure == nil, !shutdownCalled else { return false }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return true }
        guard bytes.count <= Int(Int32.max),
              Int(mr_bio_write_guarantee(libraryHalf)) >= TLSRecord.ciphertextBound(plaintextBytes: bytes.count) else { return false }
        ErrorQueue.clearStale()
        let result = SSL_write(ssl, base, Int32(bytes.count))
        if Int(result) == bytes.count { return true }
        // With the room checked first this cannot happen; if it does, part of the bytes may be
        // inside the library, so the stream is no longer whole and the session must end.
        _ = failFromLibrary()
        return false
    }

    // MARK: Closing

    /// Queues a close_notify for the peer: send what `takeCiphertext` gives, then close. After
    /// it no more plaintext is written. Before the handshake is done there is nothing to
    /// close and nothing is queued; the caller just closes.
    public func shutdown() {
        guard established, failure == nil, !shutdownCalled else { return }
        shutdownCalled = true
        sendCloseNotify()
    }

    private func sendCloseNotify() {
        ErrorQueue.clearStale()
        let result = SSL_shutdown(ssl)
        // 0: sent, the peer's not yet seen; 1: both sent. We never wait for the peer's.
        if result >= 0 {
            closeNotifyWaiting = false
            return
        }
        // WANT_WRITE: no room for the alert yet. Anything else: the caller closes anyway.
        closeNotifyWaiting = SSL_get_error(ssl, result) == SSL_ERROR_WANT_WRITE
        ErrorQueue.clear()
    }

    // MARK: What was negotiated

    /// The ALPN protocol both sides agreed on ("stun.turn"), or nil when there was none.
    public var negotiatedALPN: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The protocol version in OpenSSL's words: "TLSv1.3", "TLSv1.2" (before the handshake,
    /// the highest the session would speak).
    public var protocolVersion: String {
        String(cString: SSL_get_version(ssl))
    }

    /// The cipher suite in use ("TLS_AES_256_GCM_SHA384"), or nil before the handshake.
    public var cipherSuite: String? {
        guard let cipher = SSL_get_current_cipher(ssl), let name = SSL_CIPHER_get_name(cipher) else { return nil }
        return String(cString: name)
    }

    /// The serial number (hex, upper case) of the certificate the peer presented: on a client,
    /// the server's leaf. Nil when the peer presented none (a server's clients never do).
    public var peerCertificateSerial: String? {
        guard let certificate = SSL_get0_peer_certificate(ssl) else { return nil }
        return CertificateFields.serial(certificate)
    }

    /// On a client, why the server's certificate was not accepted ("certificate has
    /// expired"), or nil when it was (or was not checked).
    public var certificateVerdict: String? {
        let verdict = SSL_get_verify_result(ssl)
        return isServer || verdict == X509_V_OK ? nil : String(cString: X509_verify_cert_error_string(verdict))
    }

    // MARK: Failing

    @discardableResult
    private func fail(_ reason: TLSFailure, detail: String) -> TLSFailure {
        failure = reason
        failureDetail = detail
        return reason
    }

    /// Fails as `.protocolError` with the library's reasons, and the certificate check's
    /// verdict on a client, and empties the thread's error queue.
    private func failFromLibrary() -> TLSFailure {
        var detail = ErrorQueue.summary(ErrorQueue.take())
        if let verdict = certificateVerdict { detail += " (\(verdict))" }
        return fail(.protocolError, detail: detail)
    }

    private static func isIPAddress(_ name: String) -> Bool {
        var storage = in6_addr()
        return inet_pton(AF_INET, name, &storage) == 1 || inet_pton(AF_INET6, name, &storage) == 1
    }
}

extension TLSSession {
    /// Whether a stream whose first byte is `firstByte` could be TLS (`TLSRecord.looksLikeTLS`):
    /// for a plaintext STUN port to count TLS clients that came to the wrong port.
    public static func looksLikeTLS(firstByte: UInt8) -> Bool {
        TLSRecord.looksLikeTLS(firstByte: firstByte)
    }
}
