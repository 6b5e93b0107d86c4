import DatagramEngine
import NetAddress
import RelayCore

/// The TURN server's settings from the options: credentials, the peer policy with every
/// socket of this relay that is not a relayed address, relayed addresses per family, quotas.
extension Server {
    /// nil without a TURN listener (UDP, TCP or TLS).
    func turnSettings(_ relay: RelaySettings) -> TurnSettings? {
        guard options.servesTURN else { return nil }
        let credentials = TurnCredentials(realm: options.turnRealm, users: options.turnUsers.map { ($0.name, $0.password) },
                                          secrets: options.turnSecrets)
        let (relayIPv4, relayIPv6) = Server.relayedAddresses(relay.relayAddress)
        let advertised = relay.advertiseAddress
        let advertiseIPv4 = advertised.isIPv4 ? advertised : relayIPv4.flatMap { $0.isWildcard ? nil : $0 }
        let advertiseIPv6 = !advertised.isIPv4 ? advertised : relayIPv6.flatMap { $0.isWildcard ? nil : $0 }
        let listeners = options.turnListeners.map { Endpoint(host: $0.host, port: $0.port)! }
        // The relay's own sockets a TURN client must never reach: the control API, the TURN
        // listeners, the forward-rule listeners (session and relayed ports: `ownPorts`). An
        // HTTP port of 0 is chosen by the kernel later and cannot be listed here.
        let streamListeners = (options.turnTCPListeners + options.turnTLSListeners).map { Endpoint(host: $0.host, port: $0.port)! }
        var own = listeners + streamListeners + relay.rules.map(\.listen)
        if options.http.port != 0, let http = Endpoint(host: options.http.host, port: options.http.port) { own.append(http) }
        let policy = PeerPolicy(allowed: options.turnAllowedPeers, denied: options.turnDeniedPeers, ownSockets: own,
                                ownPorts: relay.ports.range,
                                relayAddresses: [relayIPv4, relayIPv6, advertiseIPv4, advertiseIPv6].compactMap { $0 },
                                ownAddresses: relay.hostAddresses)
        let authenticator = TurnAuthenticator(credentials: credentials, nonces: .fleet(secrets: options.turnNonceKeySecrets))
        if !options.turnAlternates.isEmpty && !authenticator.nonces.isShared {
            log.warning("--turn-alternate without --turn-nonce-secret or --turn-secret: the siblings cannot verify this relay's "
                + "nonces, so a browser (libwebrtc) sent on by 300 Try Alternate gets 438 there and gives up; "
                + "give every relay of the fleet the same --turn-nonce-secret")
        }
        if !authenticator.challengeFitsBareAllocate {
            log.warning("--turn-realm is \(options.turnRealm.utf8.count) bytes: the 401 to an Allocate that carries only "
                + "REQUESTED-TRANSPORT would exceed the amplification bound, so such clients get no answer; "
                + "a realm of 52 bytes or fewer avoids it")
        }
        // A family is offered only with an address to hand out for it.
        var turn = TurnSettings(authenticator: authenticator, peerPolicy: policy,
                                relayIPv4: advertiseIPv4 == nil ? nil : relayIPv4,
                                relayIPv6: advertiseIPv6 == nil ? nil : relayIPv6)
        turn.advertiseIPv4 = advertiseIPv4
        turn.advertiseIPv6 = advertiseIPv6
        turn.marking = relay.defaultPolicy
        turn.maxAllocations = options.turnMaxAllocations
        turn.streamLimits.maxConnections = options.turnMaxConnections
        turn.streamLimits.maxPerSource = options.turnMaxConnectionsPerSource
        turn.maxAllocationsPerUser = options.turnMaxAllocationsPerUser
        turn.bandwidthPerAllocation = UInt64(options.turnBandwidth)
        turn.ecnThresholds = relay.ecnThresholds
        turn.backlogThresholds = relay.backlogThresholds
        turn.limits = options.turnLimits
        turn.alternates = options.turnAlternatesInForce(ownAddresses: alternateOwnAddresses(options))
        return turn
    }

    /// This host's interface addresses. A socket bound to a wildcard (0.0.0.0 or ::, the usual
    /// --relay-address behind a 1:1 NAT) is reached on each of them, so the policy must know
    /// them all: without them a peer such as 10.0.0.5:PORT, allowed by --turn-allowed-peer,
    /// would reach the relay's own session legs and forward-rule listeners on that address.
    func hostAddresses() -> [Endpoint] {
        do {
            return try Endpoint.hostAddresses()
        } catch {
            log.warning("\(error); only the relay's configured addresses count as its own (TURN peer policy, session latching)")
            return []
        }
    }

    /// Where relayed sockets bind, per family, from `--relay-address`: an IPv4 address serves
    /// IPv4 (127.0.0.1 also IPv6 on ::1, for loopback tests), an IPv6 address IPv6, and "::"
    /// both (0.0.0.0 and ::).
    static func relayedAddresses(_ address: Endpoint) -> (Endpoint?, Endpoint?) {
        if address.isIPv4 {
            let loopback6 = Endpoint(host: "::1", port: 0)!
            return (address, address.isLoopback ? loopback6 : nil)
        }
        return (address.isWildcard ? Endpoint(ipv4: 0, port: 0) : nil, address)
    }
}
