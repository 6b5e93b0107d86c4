import CCrypto

/// The hashes STUN and TURN credentials need, from the system's libcrypto (never written by
/// hand). Control path only: every call returns a new array.
public enum Digest {
    public static func md5(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_md5(), 16) }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { digest(bytes, EVP_sha256(), 32) }

    /// HMAC-SHA1 (20 bytes): MESSAGE-INTEGRITY and REST-API passwords.
    public static func hmacSHA1(key: [UInt8], _ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        HMACContexts.current.mac(sha256: false, key: key, bytes)
    }

    /// HMAC-SHA256 (32 bytes): MESSAGE-INTEGRITY-SHA256 and nonces.
    public static func hmacSHA256(key: [UInt8], _ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        HMACContexts.current.mac(sha256: true, key: key, bytes)
    }

    public static func hmacSHA1(key: [UInt8], _ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { hmacSHA1(key: key, $0) }
    }

    public static func hmacSHA256(key: [UInt8], _ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { hmacSHA256(key: key, $0) }
    }

    /// Compares two MACs in time that depends only on their length, so a client cannot learn
    /// a correct MAC byte by byte from how fast it is refused.
    public static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0 else { return true }
        return CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0
    }

    public static func constantTimeEqual(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        a.withUnsafeBytes { constantTimeEqual($0, b) }
    }

    /// Standard base64 with padding, as coturn's REST-API passwords are written.
    public static func base64(_ bytes: [UInt8]) -> String {
        var output = [UInt8](repeating: 0, count: (bytes.count + 2) / 3 * 4 + 1)
        let written = Int(EVP_EncodeBlock(&output, bytes, Int32(bytes.count)))
        return String(decoding: output[..<written], as: UTF8.self)
    }

    /// Bytes from the system's cryptographic random generator (keys, nonces, tokens).
    public static func random(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        // RAND_bytes fails only when the system has no entropy source at all; a relay that
        // cannot make a secret key must not start.
        precondition(RAND_bytes(&bytes, Int32(count)) == 1, "libcrypto RAND_bytes failed: no entropy source")
        return bytes
    }

    private static func digest(_ bytes: [UInt8], _ type: OpaquePointer?, _ size: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: size)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &output, &length, type, nil) }
        precondition(ok == 1 && Int(length) == size, "libcrypto EVP_Digest failed")
        return output
    }
}
