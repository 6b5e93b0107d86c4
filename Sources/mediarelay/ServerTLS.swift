import RelayCore
import TLS

/// The TLS listeners' certificate: loaded before the workers start, and again on SIGHUP (a
/// certbot renewal hook sends one), with or without a config file. A new pair that does not
/// load is refused whole and the running one stays; open connections keep the certificate
/// they started with either way.
extension Server {
    /// Loads the certificate for the TLS listeners into `shared`; false (logged) when it fails.
    func loadCertificate(_ options: ServerOptions, into shared: TurnSharedState, reason: String) -> Bool {
        guard !options.turnTLSListeners.isEmpty, let cert = options.tlsCert, let key = options.tlsKey else { return true }
        do throws(TLSError) {
            let context = try TLSServerContext(certificateFile: cert, keyFile: key)
            shared.tlsContext = context
            log.always("\(reason): TLS certificate \(context.subject), serial \(context.serialNumber), from \(cert)")
            return true
        } catch {
            log.error(OptionError.oneLine("\(reason): --tls-cert \(cert) --tls-key \(key): \(error.description)"
                + (shared.tlsContext == nil ? "" : "; keeping the running certificate")))
            return false
        }
    }
}
