/// Where a handshake stands after `TLSSession.handshake()`.
///
/// `.inProgress` is a state, not an error: the session waits for more ciphertext from the
/// peer, or for the caller to take the ciphertext it produced (a flight larger than the
/// outgoing buffer is produced in parts). A failure is final.
public enum TLSHandshakeStep: Equatable, Sendable {
    case done
    case inProgress
    case failed(TLSFailure)
}
