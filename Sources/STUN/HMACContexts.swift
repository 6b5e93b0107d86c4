import CCrypto
import Glibc

/// One thread's HMAC contexts, SHA-1 and SHA-256, each made once with its digest already
/// fetched. OpenSSL 3's one-shot `HMAC()` fetches the algorithm and its digest by name on every
/// call; a TURN server computes several MACs per Allocate (nonce, MESSAGE-INTEGRITY checked and
/// written), so 2,000 clients arriving at once paid those fetches thousands of times. A context
/// is keyed afresh per MAC (`EVP_MAC_init` with the key and no parameters keeps its digest).
///
/// A context is not thread-safe, so each thread that computes MACs (the workers, the HTTP and
/// main threads) gets its own on first use, kept in thread-local storage and freed when the
/// thread ends. Never shared, so never locked.
final class HMACContexts {
    private let sha1: OpaquePointer
    private let sha256: OpaquePointer

    private init() {
        guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else {
            preconditionFailure("libcrypto has no HMAC (EVP_MAC_fetch): OpenSSL 3's default provider is missing")
        }
        defer { EVP_MAC_free(mac) }
        guard let sha1 = mr_hmac_context(mac, "SHA1"), let sha256 = mr_hmac_context(mac, "SHA256") else {
            preconditionFailure("libcrypto refused an HMAC context for SHA1 or SHA256")
        }
        self.sha1 = sha1
        self.sha256 = sha256
    }

    deinit {
        EVP_MAC_CTX_free(sha1)
        EVP_MAC_CTX_free(sha256)
    }

    /// HMAC of `bytes` under `key` with SHA-1 (20 bytes) or SHA-256 (32 bytes).
    func mac(sha256 useSHA256: Bool, key: [UInt8], _ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        let context = useSHA256 ? sha256 : sha1
        var output = [UInt8](repeating: 0, count: useSHA256 ? 32 : 20)
        var length = 0
        let ok = key.withUnsafeBytes { keyBytes in
            EVP_MAC_init(context, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), keyBytes.count, nil) == 1
                && EVP_MAC_update(context, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count) == 1
                && EVP_MAC_final(context, &output, &length, output.count) == 1
        }
        precondition(ok && length == output.count, "libcrypto EVP_MAC failed")
        return output
    }

    /// This thread's contexts, made on its first MAC.
    static var current: HMACContexts {
        if let stored = pthread_getspecific(key) { return Unmanaged<HMACContexts>.fromOpaque(stored).takeUnretainedValue() }
        let made = HMACContexts()
        pthread_setspecific(key, Unmanaged.passRetained(made).toOpaque())
        return made
    }

    /// The thread-local slot, with a destructor that releases a thread's contexts when it ends.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { stored in
            if let stored { Unmanaged<HMACContexts>.fromOpaque(stored).release() }
        }
        precondition(created == 0, "pthread_key_create failed for the HMAC contexts")
        return key
    }()
}
