/// Why a TLS context could not be set up, or a session could not be made: one line that names
/// the file (or the setting) and the problem, fit for the start-up log and for a reload's
/// refusal as it stands. A connection that fails later is a `TLSFailure`, not an error.
public struct TLSError: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
