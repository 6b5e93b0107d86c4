import STUN

/// The long-term credential the load generator's TURN clients sign their requests with.
///
/// `user` is a static user (`--turn-user NAME:PASSWORD`, coturn's `--user`). `secret` is the
/// REST API every WebRTC deployment uses (`--turn-secret`, coturn's `--static-auth-secret`):
/// the username is `EXPIRY:USER` and the password base64(HMAC-SHA1(secret, username)).
public enum TurnCredential: Sendable, Equatable {
    case user(name: String, password: String)
    case secret(String)

    /// The USER part of REST usernames.
    public static let restUser = "mediarelay-load"

    /// Parses `NAME:PASSWORD` (the password may itself contain colons).
    public init?(userPassword text: String) {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return nil }
        self = .user(name: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }

    /// The username and password to use; a REST username is valid until `expiry` (Unix
    /// seconds), which must outlast the run and its refreshes.
    func login(validUntil expiry: UInt64) -> (username: String, password: String) {
        switch self {
        case .user(let name, let password):
            return (name, password)
        case .secret(let secret):
            let username = "\(expiry):\(Self.restUser)"
            return (username, LongTermKey.restPassword(secret: Array(secret.utf8), username: username))
        }
    }
}
