import DatagramEngine
import NetAddress

/// The relay as TURN clients and peers see it, worked out from the relay's configured
/// addresses and sockets: per family, where relayed sockets bind and the address
/// XOR-RELAYED-ADDRESS names; which of the relay's sockets a TURN client must never reach as a
/// peer (`peerPolicy`); and which alternates are this relay itself (`isThisRelay`).
///
/// Rules, each a security or reachability promise:
/// - Relayed sockets bind per family from the relay address: an IPv4 address serves IPv4
///   (127.0.0.1 also IPv6 on ::1, for loopback tests), an IPv6 address IPv6, and "::" both
///   (0.0.0.0 and ::). An IPv4-mapped address (::ffff:a.b.c.d) is the IPv4 address.
/// - A family is advertised as the advertise address when it is of that family, else as the
///   relay address of that family unless that is a wildcard; a family with nothing to
///   advertise is not offered at all (no relayed address of it).
/// - The relay's own sockets are its TURN listeners (UDP, TCP, TLS) and its other listeners
///   (forward rules, the control API), and every port of the pool on any address that reaches
///   this host: the relay and advertised addresses and the host's interfaces.
///
/// Built once at start and on reload (building allocates); the results are plain values.
public struct TurnServerAddresses: Sendable, Equatable {
    /// Where relayed sockets bind, per family (port ignored); nil: the family is not offered
    /// (Allocate asking for it gets 440).
    public let relayIPv4: Endpoint?
    public let relayIPv6: Endpoint?
    /// What XOR-RELAYED-ADDRESS names, per family (port ignored). Never nil for an offered
    /// family; it may be set for one that is not (an IPv6 advertise address beside an IPv4
    /// relay address), and then names nothing a client is given, but still counts as own.
    public let advertiseIPv4: Endpoint?
    public let advertiseIPv6: Endpoint?
    /// The listeners TURN clients over UDP or TCP reach (an alternate without `tls:`).
    public let plainListeners: [Endpoint]
    /// The listeners TURN clients over TLS reach.
    public let tlsListeners: [Endpoint]
    /// The relay's other sockets that are not relayed addresses: forward-rule listeners, the
    /// control API (when its port is known).
    public let otherSockets: [Endpoint]
    /// The port pool: session legs and relayed addresses.
    public let ownPorts: ClosedRange<UInt16>?
    /// The relay and advertise addresses as configured.
    public let relayAddress: Endpoint
    public let advertiseAddress: Endpoint
    /// This host's interface addresses: a socket bound to a wildcard is reached on each.
    public let hostAddresses: [Endpoint]

    public init(relayAddress: Endpoint, advertiseAddress: Endpoint, hostAddresses: [Endpoint] = [],
                udpListeners: [Endpoint] = [], tcpListeners: [Endpoint] = [], tlsListeners: [Endpoint] = [],
                otherSockets: [Endpoint] = [], ownPorts: ClosedRange<UInt16>? = nil) {
        let (bindIPv4, bindIPv6) = Self.bindAddresses(relayAddress)
        let advertiseIPv4 = advertiseAddress.isIPv4 ? advertiseAddress : bindIPv4.flatMap { $0.isWildcard ? nil : $0 }
        let advertiseIPv6 = !advertiseAddress.isIPv4 ? advertiseAddress : bindIPv6.flatMap { $0.isWildcard ? nil : $0 }
        relayIPv4 = advertiseIPv4 == nil ? nil : bindIPv4
        relayIPv6 = advertiseIPv6 == nil ? nil : bindIPv6
        self.advertiseIPv4 = advertiseIPv4
        self.advertiseIPv6 = advertiseIPv6
        plainListeners = udpListeners + tcpListeners
        self.tlsListeners = tlsListeners
        self.otherSockets = otherSockets
        self.ownPorts = ownPorts
        self.relayAddress = relayAddress
        self.advertiseAddress = advertiseAddress
        self.hostAddresses = hostAddresses
    }

    /// Every socket of the relay that is not a relayed address.
    public var ownSockets: [Endpoint] { plainListeners + tlsListeners + otherSockets }

    /// The peer policy over these sockets and addresses, with the operator's lists.
    public func peerPolicy(allowed: [AddressRange] = [], denied: [AddressRange] = []) -> PeerPolicy {
        PeerPolicy(allowed: allowed, denied: denied, ownSockets: ownSockets, ownPorts: ownPorts,
                   relayAddresses: [relayIPv4, relayIPv6, advertiseIPv4, advertiseIPv6].compactMap { $0 },
                   ownAddresses: hostAddresses)
    }

    /// Whether an alternate (`tls`: one for TLS clients) is one of this relay's own listeners,
    /// which a client sent there would reach straight back. A plain alternate is compared with
    /// the UDP and TCP listeners (its clients come over either), a TLS one with the TLS
    /// listeners. A listener on a wildcard is reached on every address of the host
    /// (`OwnAddresses`), "::" for IPv4 too, "0.0.0.0" only for IPv4; and behind a 1:1 NAT the
    /// advertised address reaches every listener's port.
    public func isThisRelay(alternate: Endpoint, tls: Bool) -> Bool {
        let own = OwnAddresses([relayAddress, advertiseAddress] + hostAddresses)
        let host = Self.address(alternate)
        // A loopback address is never a NAT's public side (127.0.0.1 is only advertised by
        // default), and another relay may listen on it in a lab.
        let natted = host == Self.address(advertiseAddress) && !alternate.isLoopback
        return (tls ? tlsListeners : plainListeners).contains { listener in
            guard listener.port == alternate.port else { return false }
            if Self.address(listener) == host || natted { return true }
            return listener.isWildcard && (!listener.isIPv4 || alternate.isIPv4) && own.contains(alternate)
        }
    }

    private static func bindAddresses(_ address: Endpoint) -> (Endpoint?, Endpoint?) {
        if address.isIPv4 {
            return (address, address.isLoopback ? Endpoint(high: 0, low: 1, port: 0) : nil)
        }
        return (address.isWildcard ? Endpoint(ipv4: 0, port: 0) : nil, address)
    }

    /// The address alone, port and IPv6 zone left out, for comparing hosts.
    private static func address(_ endpoint: Endpoint) -> Endpoint { Endpoint(high: endpoint.high, low: endpoint.low, port: 0) }
}

extension TurnSettings {
    /// Settings whose relayed and advertised addresses per family and whose peer policy come
    /// from `addresses`; a family `addresses` does not offer gets 440 on Allocate.
    public init(authenticator: TurnAuthenticator, addresses: TurnServerAddresses,
                allowedPeers: [AddressRange] = [], deniedPeers: [AddressRange] = []) {
        self.init(authenticator: authenticator, peerPolicy: addresses.peerPolicy(allowed: allowedPeers, denied: deniedPeers),
                  relayIPv4: addresses.relayIPv4, relayIPv6: addresses.relayIPv6)
        advertiseIPv4 = addresses.advertiseIPv4
        advertiseIPv6 = addresses.advertiseIPv6
    }
}
