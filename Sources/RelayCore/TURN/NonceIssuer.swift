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
        var text = Array(NonceIssuer.prefix.utf8)
        text.reserveCapacity(text.count + 24)
        let issued = UInt32(truncatingIfNeeded: second)
        NonceIssuer.appendHex(of: withUnsafeBytes(of: issued.bigEndian) { Array($0) }, to: &text)
        NonceIssuer.appendHex(of: mac(issued, client), to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Whether `nonce` is one of ours for `client`, and still fresh at `second`.
    public func check(_ nonce: String, for client: Endpoint, at second: UInt64) -> Verdict {
        let bytes = Array(nonce.utf8)
        let prefixLength = NonceIssuer.prefix.utf8.count
        guard bytes.count == prefixLength + 8 + 16, nonce.hasPrefix(NonceIssuer.prefix) else { return .invalid }
        var issued: UInt32 = 0
        for byte in bytes[prefixLength..<(prefixLength + 8)] {
            guard let digit = NonceIssuer.hexValue(byte) else { return .invalid }
            issued = issued << 4 | UInt32(digit)
        }
        var expected: [UInt8] = []
        expected.reserveCapacity(16)
        NonceIssuer.appendHex(of: mac(issued, client), to: &expected)
        let valid = bytes[(prefixLength + 8)...].withUnsafeBytes { Digest.constantTimeEqual(expected, $0) }
        guard valid else { return .invalid }
        let now = UInt64(UInt32(truncatingIfNeeded: second))
        return UInt64(issued) <= now && now - UInt64(issued) < lifetime ? .valid : .stale
    }

    /// The first 64 bits of HMAC-SHA256 over the second and the client's address and port, as
    /// bytes (not text: formatting an address per nonce cost more than the MAC).
    private func mac(_ second: UInt32, _ client: Endpoint) -> [UInt8] {
        var input = [UInt8](repeating: 0, count: 4 + 16 + 2)
        withUnsafeBytes(of: second.bigEndian) { input.replaceSubrange(0..<4, with: $0) }
        withUnsafeBytes(of: client.high.bigEndian) { input.replaceSubrange(4..<12, with: $0) }
        withUnsafeBytes(of: client.low.bigEndian) { input.replaceSubrange(12..<20, with: $0) }
        withUnsafeBytes(of: client.port.bigEndian) { input.replaceSubrange(20..<22, with: $0) }
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
