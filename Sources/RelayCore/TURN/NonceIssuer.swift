import DatagramEngine
import NetAddress
import STUN

/// Stateless nonces that expire: the nonce carries the Unix second it was issued (8 hex
/// digits) and a 64-bit MAC (16 hex digits) over that second and the client's IP address.
/// Nothing is stored per client, so nonces cannot be used to exhaust the relay's memory, and a
/// nonce from one client address is refused from another.
///
/// The key is made fresh for this process, or shared by a fleet (`fleet(secrets:)`): then a
/// nonce one relay issued is valid on its siblings, so a client sent on by 300 Try Alternate
/// signs its Allocate there with the realm and nonce it holds, which is all libwebrtc does
/// (it never retries an Allocate after a 438, nor after a second 401). For that the clock is
/// the wall clock, which sibling hosts share within `skew`, and the MAC leaves out the port:
/// a TCP or TLS client reaches the sibling on a new connection, and a NAT whose mapping depends
/// on the destination gives the client another port towards it.
///
/// Several keys may verify while the first issues, so a fleet can rotate its secret relay by
/// relay (the new one added second everywhere, then put first, then the old one removed).
///
/// The nonce begins with RFC 8489's cookie "obMatJos2" and the security feature set with the
/// password-algorithms bit, since the server offers PASSWORD-ALGORITHMS. 37 bytes in all: a
/// 401 must stay small, because it answers requests from anyone (no amplification).
public struct NonceIssuer: Sendable {
    static let prefix = "obMatJos2gAAA"
    /// What a fleet key is derived from a shared secret with, so the key is never the secret
    /// itself (which also signs REST credentials).
    static let fleetLabel = Array("mediarelay TURN nonce key v1".utf8)
    private let keys: [[UInt8]]
    /// How long a nonce is accepted, in seconds (coturn's default stale-nonce is 600).
    public let lifetime: UInt64
    /// How far, in seconds, a nonce's issue time may lie ahead of this host's clock: a
    /// sibling's clock may run a little ahead of ours, and ours may be stepped back.
    public let skew: UInt64
    /// Whether the key is shared by a fleet (from a secret), not made for this process.
    public let isShared: Bool

    public init(lifetime: UInt64 = 600, key: [UInt8] = Digest.random(count: 32), skew: UInt64 = 30) {
        self.init(lifetime: lifetime, keys: [key], skew: skew, isShared: false)
    }

    private init(lifetime: UInt64, keys: [[UInt8]], skew: UInt64, isShared: Bool) {
        precondition(!keys.isEmpty, "a nonce issuer needs a key")
        self.lifetime = lifetime
        self.keys = keys
        self.skew = skew
        self.isShared = isShared
    }

    /// Nonces every relay holding one of `secrets` can verify: keys derived from each secret
    /// (HMAC-SHA256 over a fixed label), the first one issuing. A process key without secrets.
    public static func fleet(secrets: [[UInt8]], lifetime: UInt64 = 600, skew: UInt64 = 30) -> NonceIssuer {
        guard !secrets.isEmpty else { return NonceIssuer(lifetime: lifetime, skew: skew) }
        let keys = secrets.map { Digest.hmacSHA256(key: $0, fleetLabel) }
        return NonceIssuer(lifetime: lifetime, keys: keys, skew: skew, isShared: true)
    }

    public enum Verdict: Equatable, Sendable { case valid, stale, invalid }

    /// A nonce for `client` issued at `second` (Unix seconds).
    public func issue(for client: Endpoint, at second: UInt64) -> String {
        var text = Array(NonceIssuer.prefix.utf8)
        text.reserveCapacity(text.count + 24)
        let issued = UInt32(truncatingIfNeeded: second)
        NonceIssuer.appendHex(of: withUnsafeBytes(of: issued.bigEndian) { Array($0) }, to: &text)
        NonceIssuer.appendHex(of: mac(issued, client, key: keys[0]), to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Whether `nonce` was issued under one of the keys for `client`'s address, and is still
    /// fresh at `second`.
    public func check(_ nonce: String, for client: Endpoint, at second: UInt64) -> Verdict {
        guard let issued = NonceIssuer.issued(nonce) else { return .invalid }
        let bytes = Array(nonce.utf8)
        let prefixLength = NonceIssuer.prefix.utf8.count
        let valid = keys.contains { key in
            var expected: [UInt8] = []
            expected.reserveCapacity(16)
            NonceIssuer.appendHex(of: mac(issued, client, key: key), to: &expected)
            return bytes[(prefixLength + 8)...].withUnsafeBytes { Digest.constantTimeEqual(expected, $0) }
        }
        guard valid else { return .invalid }
        return isFresh(issued: issued, at: second) ? .valid : .stale
    }

    /// The second (Unix, truncated to 32 bits) a nonce of ours says it was issued at; nil for
    /// text of another shape. Says nothing of whether the nonce is genuine: `check` does.
    static func issued(_ nonce: String) -> UInt32? {
        let bytes = Array(nonce.utf8)
        let prefixLength = NonceIssuer.prefix.utf8.count
        guard bytes.count == prefixLength + 8 + 16, nonce.hasPrefix(NonceIssuer.prefix) else { return nil }
        var issued: UInt32 = 0
        for byte in bytes[prefixLength..<(prefixLength + 8)] {
            guard let digit = NonceIssuer.hexValue(byte) else { return nil }
            issued = issued << 4 | UInt32(digit)
        }
        return issued
    }

    /// Whether a nonce issued at `issued` is within its lifetime at `second`, in 32-bit
    /// arithmetic so that the truncated seconds compare across a wrap; the issue time may lie
    /// up to `skew` ahead.
    func isFresh(issued: UInt32, at second: UInt64) -> Bool {
        let age = Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: second) &- issued))
        return age >= -Int64(skew) && age < Int64(lifetime)
    }

    /// The first 64 bits of HMAC-SHA256 over the second and the client's IP address, as bytes
    /// (not text: formatting an address per nonce cost more than the MAC).
    private func mac(_ second: UInt32, _ client: Endpoint, key: [UInt8]) -> [UInt8] {
        var input = [UInt8](repeating: 0, count: 4 + 16)
        withUnsafeBytes(of: second.bigEndian) { input.replaceSubrange(0..<4, with: $0) }
        withUnsafeBytes(of: client.high.bigEndian) { input.replaceSubrange(4..<12, with: $0) }
        withUnsafeBytes(of: client.low.bigEndian) { input.replaceSubrange(12..<20, with: $0) }
        return Array(Digest.hmacSHA256(key: key, input)[0..<8])
    }

    private static let digits = Array("0123456789abcdef".utf8)

    private static func appendHex(of bytes: [UInt8], to text: inout [UInt8]) {
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
    }

    /// A lower-case hex digit's value (the issuer writes lower case only).
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
