import DatagramEngine
import NetAddress
import STUN

/// Stateless nonces that expire: the nonce carries the second it was issued (8 hex digits of a
/// monotonic clock's seconds) and a 64-bit MAC (16 hex digits), under a
/// key made fresh for this process, over that second and the client's address. Nothing is
/// stored per client, so nonces cannot be used to exhaust the relay's memory, and a nonce
/// from one client address is refused from another.
///
/// The nonce begins with RFC 8489's cookie "obMatJos2" and the security feature set with the
/// password-algorithms bit, since the server offers PASSWORD-ALGORITHMS. 37 bytes in all: a
/// 401 must stay small, because it answers requests from anyone (no amplification).
public struct NonceIssuer: Sendable {
    static let prefix = "obMatJos2gAAA"
    private let key: [UInt8]
    /// How long a nonce is accepted, in seconds (coturn's default stale-nonce is 600).
    public let lifetime: UInt64

    public init(lifetime: UInt64 = 600, key: [UInt8] = Digest.random(count: 32)) {
        self.lifetime = lifetime
        self.key = key
    }

    public enum Verdict: Equatable, Sendable { case valid, stale, invalid }

    /// A nonce for `client` issued at `second` (of any clock that only moves forward).
    public func issue(for client: Endpoint, at second: UInt64) -> String {
        let time = hex(second & 0xFFFF_FFFF, digits: 8)
        return NonceIssuer.prefix + time + mac(time, client)
    }

    /// Whether `nonce` is one of ours for `client`, and still fresh at `second`.
    public func check(_ nonce: String, for client: Endpoint, at second: UInt64) -> Verdict {
        let bytes = Array(nonce.utf8)
        let prefixLength = NonceIssuer.prefix.utf8.count
        guard bytes.count == prefixLength + 8 + 16, nonce.hasPrefix(NonceIssuer.prefix) else { return .invalid }
        let time = String(decoding: bytes[prefixLength..<(prefixLength + 8)], as: UTF8.self)
        guard let issued = UInt64(time, radix: 16) else { return .invalid }
        let expected = Array(mac(time, client).utf8)
        let valid = bytes[(prefixLength + 8)...].withUnsafeBytes { Digest.constantTimeEqual(expected, $0) }
        guard valid else { return .invalid }
        let now = second & 0xFFFF_FFFF
        return issued <= now && now - issued < lifetime ? .valid : .stale
    }

    private func mac(_ time: String, _ client: Endpoint) -> String {
        let input = Array("\(time)|\(client)".utf8)
        return Digest.hmacSHA256(key: key, input)[0..<8].map { hex(UInt64($0), digits: 2) }.joined()
    }

    private func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
