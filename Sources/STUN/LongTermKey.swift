/// The long-term credential key (RFC 8489 section 9.2.2): MD5 or SHA-256 of
/// "username:realm:password". The strings are used as given (no OpaqueString/SASLprep
/// processing), as coturn does; ASCII credentials, the common case, are unaffected.
public enum LongTermKey {
    public static func derive(username: String, realm: String, password: String,
                              algorithm: PasswordAlgorithm = .md5) -> [UInt8] {
        let input = Array("\(username):\(realm):\(password)".utf8)
        return algorithm == .md5 ? Digest.md5(input) : Digest.sha256(input)
    }

    /// The password of a TURN REST-API username (coturn's `use-auth-secret`, the scheme WebRTC
    /// deployments mint credentials with): base64(HMAC-SHA1(secret, username)).
    public static func restPassword(secret: [UInt8], username: String) -> String {
        Digest.base64(Digest.hmacSHA1(key: secret, Array(username.utf8)))
    }
}
