import ClientSockets
import CSSL
import Glibc
import NetAddress

/// The TLS side of a run's TURN over TLS clients (`--turn-transport tls`): one OpenSSL client
/// context for all its connections. TLS 1.2 or 1.3 with the library's defaults, ALPN
/// "stun.turn" offered (RFC 7443). Like coturn's turnutils_uclient it does not check the
/// server's certificate unless given a CA file (`--tls-ca`); then the chain must lead to that
/// CA and the certificate must name the host the clients were pointed at (DNS name or IP).
///
/// OpenSSL reads and writes the connection's socket itself (SSL_set_fd on a non-blocking
/// socket); WANT_READ and WANT_WRITE go back to the caller's poll loop. The context is only
/// read once set up, which OpenSSL allows from any thread; each connection's SSL object has one
/// user at a time (`TurnStreamConnection` says how).
package final class SocketTLSContext: @unchecked Sendable {
    private let context: OpaquePointer
    /// Whether the server's certificate is checked (a CA file was given).
    let verifies: Bool

    /// ALPN's wire form: one length-prefixed protocol name.
    private static let alpn: [UInt8] = [9] + Array("stun.turn".utf8)

    package init(caFile: String?) throws(LoadError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw LoadError("TLS: cannot create a client context: \(SocketTLSContext.errorQueueText())")
        }
        self.context = context
        verifies = caFile != nil
        _ = mr_ssl_set_min_proto_version(context, TLS1_2_VERSION)
        // A write that WANT_WRITE interrupted is retried from the connection's output buffer,
        // which may have moved by then (it is compacted); a record at a time is enough.
        _ = mr_ssl_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        // SSL_CTX_set_alpn_protos returns 0 on success, unlike most of the library.
        guard Self.alpn.withUnsafeBufferPointer({ SSL_CTX_set_alpn_protos(context, $0.baseAddress, UInt32($0.count)) }) == 0 else {
            SSL_CTX_free(context)
            throw LoadError("TLS: cannot offer ALPN stun.turn: \(SocketTLSContext.errorQueueText())")
        }
        if let caFile {
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                SSL_CTX_free(context)
                throw LoadError("--tls-ca \(caFile): cannot load it as PEM CA certificates: \(SocketTLSContext.errorQueueText())")
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
        // A server that resets a connection must fail that client, not stop the process:
        // OpenSSL writes to the socket with write(2), which raises SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
    }

    deinit { SSL_CTX_free(context) }

    /// A client session on the connected socket `fd`, for the server named `host` (as the user
    /// wrote it: sent as SNI when it is a name, and checked against the certificate when
    /// `verifies`). The caller owns the result and frees it with SSL_free.
    package func session(fd: Int32, host: String) throws(LoadError) -> OpaquePointer {
        guard let ssl = SSL_new(context) else { throw LoadError("TLS: SSL_new: \(SocketTLSContext.errorQueueText())") }
        let isLiteral = IPLiteral.isIPv4(host) || IPLiteral.isIPv6(host)
        var ok = SSL_set_fd(ssl, fd) == 1
        // SNI carries names only (RFC 6066 section 3).
        if ok && !isLiteral {
            ok = host.withCString { SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0)) } == 1
        }
        // OpenSSL 3 matches an IP literal against the certificate's IP addresses, a name
        // against its DNS names.
        if ok && verifies { ok = SSL_set1_host(ssl, host) == 1 }
        guard ok else {
            SSL_free(ssl)
            throw LoadError("TLS: setting up a session for \(host): \(SocketTLSContext.errorQueueText())")
        }
        SSL_set_connect_state(ssl)
        return ssl
    }

    /// Why a handshake failed: the certificate check's verdict when that was it, else the
    /// library's error queue (emptied), else `fallback`.
    static func handshakeFailure(_ ssl: OpaquePointer, fallback: String) -> String {
        let verdict = SSL_get_verify_result(ssl)
        if verdict != X509_V_OK {
            ERR_clear_error()
            return "certificate not accepted: \(String(cString: X509_verify_cert_error_string(verdict)))"
        }
        let queued = errorQueueText()
        return queued.isEmpty ? fallback : queued
    }

    /// The calling thread's OpenSSL errors as text, oldest first; the queue is empty afterwards.
    static func errorQueueText() -> String {
        var texts: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while case let code = ERR_get_error(), code != 0 {
            ERR_error_string_n(code, &buffer, buffer.count)
            texts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return texts.joined(separator: "; ")
    }
}
