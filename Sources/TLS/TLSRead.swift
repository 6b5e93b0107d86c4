/// What `TLSSession.readPlaintext(into:)` gave.
///
/// `.wantMore` is a state, not an error: no whole record is buffered yet. `.closed` means the
/// peer sent close_notify (answer with `shutdown()` and close); it and `.failed` are final.
public enum TLSRead: Equatable, Sendable {
    /// This many plaintext bytes (always more than zero) are at the start of the buffer.
    case bytes(Int)
    case wantMore
    case closed
    case failed(TLSFailure)
}
