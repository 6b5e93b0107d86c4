import CSSL

/// The settings every context gets, server or client, in one place so the two cannot drift.
enum ContextSettings {
    static func apply(to context: OpaquePointer, maximumVersion: TLSVersion) throws(TLSError) {
        guard mr_ssl_set_min_proto_version(context, TLSVersion.tls12.openSSLValue) == 1,
              mr_ssl_set_max_proto_version(context, maximumVersion.openSSLValue) == 1 else {
            throw TLSError("TLS versions 1.2 to \(maximumVersion) could not be set: \(ErrorQueue.summary(ErrorQueue.take()))")
        }
        mr_ssl_disable_renegotiation_and_compression(context)
        // No SSL_MODE_RELEASE_BUFFERS: the library keeps its record buffers for the session's
        // life rather than allocating them again for every burst. No ENABLE_PARTIAL_WRITE: a
        // write goes out whole (TLSSession checks the room first). Moving write buffers are
        // allowed, as our callers' buffers move between writes.
        _ = mr_ssl_set_mode(context, Int(SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
    }
}
