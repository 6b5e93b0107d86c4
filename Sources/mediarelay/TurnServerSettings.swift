import DatagramEngine
import NetAddress
import RelayCore

/// The TURN server's settings from the options: credentials, the relay's addresses and sockets
/// as `TurnServerAddresses` works them out (relayed addresses per family, the peer policy),
/// quotas.
extension Server {
    /// nil without a TURN listener (UDP, TCP or TLS).
    func turnSettings(_ relay: RelaySettings) -> TurnSettings? {
        guard options.servesTURN else { return nil }
        let credentials = TurnCredentials(realm: options.turnRealm, users: options.turnUsers.map { ($0.name, $0.password) },
                                          secrets: options.turnSecrets)
        let addresses = options.turnAddresses(hostAddresses: relay.hostAddresses)
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
        var turn = TurnSettings(authenticator: authenticator, addresses: addresses,
                                allowedPeers: options.turnAllowedPeers, deniedPeers: options.turnDeniedPeers)
        turn.marking = relay.defaultPolicy
        turn.maxAllocations = options.turnMaxAllocations
        turn.streamLimits.maxConnections = options.turnMaxConnections
        turn.streamLimits.maxPerSource = options.turnMaxConnectionsPerSource
        turn.maxAllocationsPerUser = options.turnMaxAllocationsPerUser
        turn.bandwidthPerAllocation = UInt64(options.turnBandwidth)
        turn.ecnThresholds = relay.ecnThresholds
        turn.backlogThresholds = relay.backlogThresholds
        turn.limits = options.turnLimits
        // Written on the worker that met it, past its rate limit (one write(2) a line).
        let log = self.log
        let lines = TurnNoticeLine(options: options, maxPermissions: turn.maxPermissions)
        turn.notices = { notice in lines.write(notice, to: log) }
        noteAlternatesThatAreThisRelay(options, addresses)
        turn.alternates = options.turnAlternatesInForce(leavingOut: addresses)
        return turn
    }

    /// This host's interface addresses. A socket bound to a wildcard (0.0.0.0 or ::, the usual
    /// --relay-address behind a 1:1 NAT) is reached on each of them, so the policy must know
    /// them all: without them a peer such as 10.0.0.5:PORT, allowed by --turn-allowed-peer,
    /// would reach the relay's own session legs and forward-rule listeners on that address.
    func hostAddresses() -> [Endpoint] {
        do {
            return try HostInterfaces.read().addresses
        } catch {
            log.warning("\(error); only the relay's configured addresses count as its own (TURN peer policy, session latching)")
            return []
        }
    }
}

extension ServerOptions {
    /// The relay's addresses and sockets for the TURN server, with `hostAddresses` as this
    /// host's interfaces. An HTTP port of 0 is chosen by the kernel later and cannot be listed.
    func turnAddresses(hostAddresses: [Endpoint]) -> TurnServerAddresses {
        var other = forwards.map(\.listen.endpoint)
        if http.port != 0 { other.append(http.endpoint) }
        return TurnServerAddresses(relayAddress: Endpoint(host: relayAddress, port: 0)!,
                                   advertiseAddress: Endpoint(host: advertiseAddress, port: 0)!, hostAddresses: hostAddresses,
                                   udpListeners: turnListeners.map(\.endpoint), tcpListeners: turnTCPListeners.map(\.endpoint),
                                   tlsListeners: turnTLSListeners.map(\.endpoint), otherSockets: other, ownPorts: ports.low...ports.high)
    }
}
