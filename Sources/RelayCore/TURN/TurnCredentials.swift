import STUN

/// Who may allocate: static users (name and password) and REST-API secrets compatible with
/// coturn's `use-auth-secret`. A REST username is `EXPIRY[:USER]` (or `USER:EXPIRY`, which
/// coturn accepts too), EXPIRY in Unix seconds; its password is
/// base64(HMAC-SHA1(secret, username)). Several secrets may be valid at once, so an operator
/// can rotate them without refusing credentials minted under the old one.
public struct TurnCredentials: Sendable {
    public var realm: String
    /// Static users' long-term keys by name, for each password algorithm.
    private var md5Keys: [String: [UInt8]] = [:]
    private var sha256Keys: [String: [UInt8]] = [:]
    public private(set) var secrets: [[UInt8]] = []
    /// coturn's `--rest-api-separator`.
    public var separator: Character = ":"

    public init(realm: String, users: [(name: String, password: String)] = [], secrets: [String] = []) {
        self.realm = realm
        for user in users { add(user: user.name, password: user.password) }
        self.secrets = secrets.map { Array($0.utf8) }
    }

    public mutating func add(user: String, password: String) {
        md5Keys[user] = LongTermKey.derive(username: user, realm: realm, password: password, algorithm: .md5)
        sha256Keys[user] = LongTermKey.derive(username: user, realm: realm, password: password, algorithm: .sha256)
    }

    /// Why a username has no key.
    public enum Refusal: Error, Equatable, Sendable {
        /// Neither a static user nor a REST username (or no secret is configured).
        case unknownUser
        /// A REST username whose expiry has passed.
        case expired
    }

    /// The keys a message from `username` may be signed with: a static user's, and one per
    /// REST secret (rotation) while the username's expiry is in the future.
    public func keys(for username: String, algorithm: PasswordAlgorithm, unixTime: UInt64) -> Result<[[UInt8]], Refusal> {
        var keys: [[UInt8]] = []
        if let key = (algorithm == .md5 ? md5Keys : sha256Keys)[username] { keys.append(key) }
        var expired = false
        if !secrets.isEmpty, let expiry = restExpiry(of: username) {
            if expiry > unixTime {
                for secret in secrets {
                    let password = LongTermKey.restPassword(secret: secret, username: username)
                    keys.append(LongTermKey.derive(username: username, realm: realm, password: password, algorithm: algorithm))
                }
            } else {
                expired = true
            }
        }
        if keys.isEmpty { return .failure(expired ? .expired : .unknownUser) }
        return .success(keys)
    }

    /// The REST password for `username` under `secret`, as a client (or coturn's -W) mints it.
    public static func restPassword(secret: String, username: String) -> String {
        LongTermKey.restPassword(secret: Array(secret.utf8), username: username)
    }

    /// The expiry of a REST username: the digits before the first separator, or else the
    /// digits after the last; nil when neither part is a number.
    func restExpiry(of username: String) -> UInt64? {
        guard let first = username.firstIndex(of: separator) else { return UInt64(username) }
        if let expiry = UInt64(username[..<first]) { return expiry }
        let last = username.lastIndex(of: separator)!
        return UInt64(username[username.index(after: last)...])
    }
}
