import CSSL

/// A client's settings, for tests and the load generator: the CA certificates it trusts (or
/// none: no verification at all, as coturn's uclient connects), the ALPN protocols it offers,
/// and the highest TLS version it speaks (1.2 is always the lowest).
///
/// Contract: read-only once `init` returns, so one context serves sessions on any thread.
/// With a CA file, a session checks the server's chain and its name (`serverName`).
public final class TLSClientContext: @unchecked Sendable {
    let context: OpaquePointer
    /// Whether sessions check the server's certificate (a CA file was given).
    let verifiesServer: Bool

    /// `caFile`: PEM certificates to trust, or nil to trust any server (tests, load). `alpn`:
    /// protocols to offer, most wanted first ("stun.turn"); none offers no ALPN.
    /// `maximumVersion`: `.tls12` holds the client at TLS 1.2.
    public init(trusting caFile: String?, alpn: [String] = [], maximumVersion: TLSVersion = .tls13) throws(TLSError) {
        if let caFile { try PEMFile.requireReadable(caFile, role: "TLS CA file") }
        let wire = try ALPN.wire(alpn)
        ErrorQueue.clear()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSError("TLS client context could not be made: \(ErrorQueue.summary(ErrorQueue.take()))")
        }
        do throws(TLSError) {
            try ContextSettings.apply(to: context, maximumVersion: maximumVersion)
            if let caFile {
                guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                    throw TLSError("TLS CA file \(caFile) holds no usable PEM certificate (\(ErrorQueue.summary(ErrorQueue.take())))")
                }
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            } else {
                SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            }
            // SSL_CTX_set_alpn_protos alone returns 0 on success.
            if !wire.isEmpty, SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)) != 0 {
                throw TLSError("ALPN protocols \(alpn) could not be set: \(ErrorQueue.summary(ErrorQueue.take()))")
            }
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        self.context = context
        verifiesServer = caFile != nil
    }

    deinit {
        SSL_CTX_free(context)
    }
}
