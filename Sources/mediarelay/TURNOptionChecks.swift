import Foundation
import NetAddress
import TLS

extension ServerOptions {
    /// Checks of the TURN options that need more than one value.
    func validateTURN() throws(OptionError) {
        try validateTLS()
        guard let first = (turnListeners + turnTCPListeners + turnTLSListeners).first else {
            // Credentials or peer lists without a listener are a config that does not do what
            // its author thinks.
            let orphan: OptionKey? = if !turnUsers.isEmpty { .turnUser }
                else if turnUsersFile != nil { .turnUsersFile }
                else if turnSecretFile != nil { .turnSecretFile }
                else if !turnSecrets.isEmpty { .turnSecret }
                else if !turnNonceSecrets.isEmpty { .turnNonceSecret }
                else if !turnAllowedPeers.isEmpty { .turnAllowedPeer }
                else if !turnDeniedPeers.isEmpty { .turnDeniedPeer }
                else if !turnAlternates.isEmpty { .turnAlternate }
                else if turnAlternateDomain != nil { .turnAlternateDomain }
                else { nil }
            if let orphan {
                throw OptionError(subject: orphan.flag,
                                  problem: "TURN settings without a TURN listener do nothing; add --turn, --turn-tcp or --turn-tls HOST:PORT")
            }
            return
        }
        if turnUsers.isEmpty && turnSecrets.isEmpty {
            let flag = !turnListeners.isEmpty ? "--turn" : !turnTCPListeners.isEmpty ? "--turn-tcp" : "--turn-tls"
            throw OptionError(
                subject: "\(flag) \(first)",
                problem: "needs credentials: --turn-user, --turn-users-file, --turn-secret-file, --turn-secret or "
                    + "\(ServerOptions.turnSecretEnvironmentVariable) (TURN without authentication is an open relay)"
            )
        }
        var listeners = Set<HostPort>()
        for listener in turnListeners where !listeners.insert(listener).inserted {
            throw OptionError(subject: "--turn \(listener)", problem: "given twice; each listener once")
        }
        for rule in forwards where listeners.contains(rule.listen) {
            throw OptionError(subject: "--turn \(rule.listen)", problem: "is also the listen address of --forward \(rule); each UDP port serves one purpose")
        }
        // TCP ports: the TURN listeners over TCP and TLS, and the HTTP listener.
        var tcp: [HostPort: String] = [http: "--http"]
        for (flag, list) in [("--turn-tcp", turnTCPListeners), ("--turn-tls", turnTLSListeners)] {
            for listener in list {
                if let other = tcp[listener] {
                    let problem = other == flag ? "given twice; each listener once" : "is also \(other)'s address; each TCP port serves one purpose"
                    throw OptionError(subject: "\(flag) \(listener)", problem: problem)
                }
                tcp[listener] = flag
            }
        }
        var alternates = Set<TurnAlternateSpec>()
        for alternate in turnAlternates where !alternates.insert(alternate).inserted {
            throw OptionError(subject: "--turn-alternate \(alternate)", problem: "given twice; each alternate once")
        }
        if turnSecrets.count > OptionKey.turnSecret.maxCount {
            throw OptionError(subject: "--turn-secret-file \(OptionError.quoted(turnSecretFile ?? ""))",
                              problem: "\(turnSecrets.count) secrets with --turn-secret's; at most \(OptionKey.turnSecret.maxCount) are accepted")
        }
        var names = Set<String>()
        for user in turnUsers where !names.insert(user.name).inserted {
            throw OptionError(
                subject: "--turn-user",
                problem: "user \"\(OptionError.quoted(user.name))\" is given twice (flags, config or --turn-users-file); each name once"
            )
        }
    }
}

extension ServerOptions {
    /// --turn-tls needs a certificate and key that load and match; a certificate without a TLS
    /// listener does nothing. The files are loaded here, so a bad pair stops start-up (or a
    /// reload) with one line that names the file and the problem.
    func validateTLS() throws(OptionError) {
        guard let first = turnTLSListeners.first else {
            if let cert = tlsCert { throw OptionError(subject: "--tls-cert \(OptionError.quoted(cert))", problem: "does nothing without --turn-tls HOST:PORT") }
            if let key = tlsKey { throw OptionError(subject: "--tls-key \(OptionError.quoted(key))", problem: "does nothing without --turn-tls HOST:PORT") }
            return
        }
        guard let tlsCert, let tlsKey else {
            throw OptionError(subject: "--turn-tls \(first)", problem: "needs --tls-cert FILE and --tls-key FILE (PEM: the certificate chain and its key)")
        }
        do throws(TLSError) {
            _ = try TLSServerContext(certificateFile: tlsCert, keyFile: tlsKey)
        } catch {
            throw OptionError(subject: "--tls-cert \(OptionError.quoted(tlsCert)) --tls-key \(OptionError.quoted(tlsKey))", problem: error.description)
        }
    }
}

extension ServerOptions {
    /// A TURN listener other hosts reach, while relayed addresses would be advertised as
    /// 127.0.0.1 (what a wildcard --relay-address gives without --advertise-address): every
    /// client elsewhere would be handed a relayed address it cannot reach. Called by `parse`
    /// only when no advertise address was given.
    func requireAdvertiseAddressForTURN() throws(OptionError) {
        guard IPLiteral.isWildcard(relayAddress) else { return }
        for (flag, listeners) in [("--turn", turnListeners), ("--turn-tcp", turnTCPListeners), ("--turn-tls", turnTLSListeners)] {
            for listener in listeners where !IPLiteral.isLoopback(listener.host) {
                throw OptionError(
                    subject: "\(flag) \(listener)",
                    problem: "other hosts reach this listener, but with --relay-address \(relayAddress) (a wildcard) relayed "
                        + "addresses would be advertised as \(ServerOptions.wildcardAdvertiseAddress); give --advertise-address "
                        + "with the address clients and peers reach this host at"
                )
            }
        }
    }

    /// A UDP listener on a port of --ports would meet sessions and relayed addresses binding
    /// the same port (or block them); TCP listeners share no ports with the pool.
    func requireUDPListenersOutsidePorts() throws(OptionError) {
        let listeners = turnListeners.map { ("--turn \($0)", $0) } + forwards.map { ("--forward \($0)", $0.listen) }
        for (subject, listener) in listeners where (ports.low...ports.high).contains(listener.port) {
            throw OptionError(
                subject: subject,
                problem: "port \(listener.port) is inside --ports \(ports), which sessions and TURN relayed addresses take their "
                    + "ports from; move the listener out of the range or narrow --ports"
            )
        }
    }
}
