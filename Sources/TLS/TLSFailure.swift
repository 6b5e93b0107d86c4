/// Why a TLS connection failed, as the stats count it. The raw values are metric labels, so
/// the set is small and stable: add a case only with a new label, never rename one.
///
/// The detail of one failure (which alert, which certificate check) is in the session's
/// `failureDetail`, for a log line, never a label.
public enum TLSFailure: String, Equatable, Sendable {
    /// The first bytes are not a TLS handshake record: plaintext STUN on the TLS port, HTTP,
    /// a port scanner. Judged from the record header before the library sees anything.
    case notTLS = "not_tls"
    /// Anything the library refused: no shared version or cipher, a bad record or MAC, a
    /// certificate the client did not trust, an alert from the peer.
    case protocolError = "protocol"
    /// The peer sent close_notify before the handshake was done.
    case peerClosed = "peer_closed"
}
