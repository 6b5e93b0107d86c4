import CSSL

/// A server's certificate chain and private key, loaded and checked once, with the settings
/// every server connection shares: TLS 1.2 at least, 1.3 allowed, the library's default cipher
/// suites, no renegotiation, no compression, ALPN "stun.turn" when offered.
///
/// Contract: once `init` returns, the context is only read (OpenSSL's SSL_CTX is safe to share
/// between threads once set up), so one context serves every worker. A reload builds a new
/// context and swaps it in whole; sessions made from the old one keep it alive (the library
/// counts references) and finish with the old certificate.
///
/// An expired certificate is loaded, not refused: whether to serve it is the operator's call,
/// so `notAfter` and `secondsUntilExpiry` are there for a warning in the log.
public final class TLSServerContext: @unchecked Sendable {
    let context: OpaquePointer
    /// The leaf certificate, owned by the context.
    private let leaf: OpaquePointer

    /// The leaf certificate's serial number in hex, upper case ("1234567890ABCDEF").
    public let serialNumber: String
    /// The leaf certificate's subject in one line ("CN = localhost, O = example"), as
    /// `openssl x509 -subject` prints it.
    public let subject: String
    /// The end of the leaf certificate's validity, as `openssl x509 -enddate` prints it.
    public let notAfter: String

    /// Loads `certificateFile` (PEM: the leaf first, then the chain up to, not necessarily
    /// including, the root) and `keyFile` (a PEM private key, unencrypted) and checks that
    /// the key belongs to the leaf. Throws one line naming the file and what is wrong with it:
    /// missing or unreadable, no certificate in it, no key in it, a key of another certificate.
    public init(certificateFile: String, keyFile: String) throws(TLSError) {
        try PEMFile.requireReadable(certificateFile, role: "TLS certificate file")
        try PEMFile.requireReadable(keyFile, role: "TLS key file")
        ErrorQueue.clear()
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw TLSError("TLS server context could not be made: \(ErrorQueue.summary(ErrorQueue.take()))")
        }
        do throws(TLSError) {
            try ContextSettings.apply(to: context, maximumVersion: .tls13)
            try Self.loadCertificate(certificateFile, into: context)
            try Self.loadKey(keyFile, certificateFile: certificateFile, into: context)
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        SSL_CTX_set_alpn_select_cb(context, ALPN.selectTURN, nil)
        // No server-side session cache: it is one table for every worker, behind a lock, and
        // holds up to 20,480 TLS 1.2 sessions. Resumption still works through session tickets,
        // which the client keeps (TLS 1.3's are stateless, as is the library's default).
        _ = mr_ssl_session_cache_off(context)
        self.context = context
        // Present: the chain file held a leaf, or loading would have thrown.
        leaf = SSL_CTX_get0_certificate(context)!
        serialNumber = CertificateFields.serial(leaf)
        subject = CertificateFields.subject(leaf)
        notAfter = CertificateFields.notAfter(leaf)
    }

    deinit {
        SSL_CTX_free(context)
    }

    /// Seconds from now until the leaf certificate expires; negative once it has.
    public var secondsUntilExpiry: Int {
        CertificateFields.secondsUntilExpiry(leaf)
    }

    private static func loadCertificate(_ path: String, into context: OpaquePointer) throws(TLSError) {
        guard SSL_CTX_use_certificate_chain_file(context, path) != 1 else { return }
        let errors = ErrorQueue.take()
        if errors.contains(where: { $0.library == ERR_LIB_PEM && $0.reason == PEM_R_NO_START_LINE }) {
            throw TLSError("TLS certificate file \(path) holds no PEM certificate (no \"-----BEGIN CERTIFICATE-----\" line): it must hold the server's certificate, then its chain")
        }
        throw TLSError("TLS certificate file \(path) could not be loaded: \(ErrorQueue.summary(errors))")
    }

    private static func loadKey(_ path: String, certificateFile: String, into context: OpaquePointer) throws(TLSError) {
        if SSL_CTX_use_PrivateKey_file(context, path, SSL_FILETYPE_PEM) != 1 {
            let errors = ErrorQueue.take()
            if errors.contains(where: Self.isMismatch) {
                throw TLSError("TLS key file \(path) does not match the certificate in \(certificateFile): give the key the certificate was issued for")
            }
            throw TLSError("TLS key file \(path) holds no PEM private key OpenSSL can use (\(ErrorQueue.summary(errors))): it must hold the certificate's private key, unencrypted")
        }
        guard SSL_CTX_check_private_key(context) != 1 else { return }
        ErrorQueue.clear()
        throw TLSError("TLS key file \(path) does not match the certificate in \(certificateFile): give the key the certificate was issued for")
    }

    private static func isMismatch(_ entry: ErrorQueue.Entry) -> Bool {
        entry.library == ERR_LIB_X509 && (entry.reason == X509_R_KEY_VALUES_MISMATCH || entry.reason == X509_R_KEY_TYPE_MISMATCH)
    }
}
