import DatagramEngine
import NetAddress

/// Decides whether a TURN client may use a peer address, so the relay is never an open relay
/// into networks only it can reach (RFC 8656 section 21.3; coturn's CVE-2020-26262, where
/// 0.0.0.0 and :: reached the server's own loopback services).
///
/// Checked once per CreatePermission (address only: permissions ignore the port), per
/// ChannelBind and per Send indication (address and port), never per ChannelData datagram: a
/// channel's peer was checked when it was bound. A decision allocates nothing and takes no lock.
///
/// Order of the rules, first match wins:
/// 1. `denied` (`--turn-denied-peer`): refused. The operator's explicit refusal beats everything.
/// 2. Another allocation's relayed address on this server (an address of `relayAddresses` for
///    which the `isRelayedAddress` hook says yes; for an address-only check, any address of
///    `relayAddresses`): allowed. Two WebRTC clients of one TURN
///    service reach each other this way, even when the relay's address is private or loopback.
/// 3. One of the relay's own non-relay sockets (`ownSockets`: control/HTTP port, TURN
///    listeners, forward-rule listeners; `ownPorts` on any own address: session and relayed
///    ports of the port pool): refused, and `allowed` does not change that; a TURN client must
///    never reach the control API or hijack another flow's port.
/// 4. `allowed` (`--turn-allowed-peer`): allowed, even inside the default list below.
/// 5. `defaultDenied` (loopback, unspecified, private, link-local, multicast, broadcast,
///    reserved and documentation blocks):
///    refused with the block's reason.
/// 6. Anything else: allowed.
///
/// IPv4-mapped IPv6 peers (::ffff:a.b.c.d) are the same `Endpoint` as the IPv4 peer, so every
/// IPv4 rule covers its mapped form. An IPv6 address that reaches an IPv4 address through a
/// gateway or tunnel (NAT64, 6to4, Teredo, ISATAP: `Endpoint.embeddedIPv4`) is judged by every
/// rule as that IPv4 address: rules 1 and 3 to 5 refuse it when they refuse either form, rule
/// 4 allows it only when it allows the IPv4 address, and rule 2 never applies (the relay hands
/// out no such form, and a gateway's path is not the relay's).
public struct PeerPolicy: Sendable {
    /// `--turn-allowed-peer` blocks.
    public var allowed: [AddressRange]
    /// `--turn-denied-peer` blocks.
    public var denied: [AddressRange]
    /// The relay's sockets that are not relayed addresses (the server fills this in). A socket
    /// bound to a wildcard (0.0.0.0 or ::) stands for its port on every own address.
    public private(set) var ownSockets: Set<Endpoint>
    /// Ports the relay hands to sessions and relayed addresses (the port pool): refused on own
    /// addresses unless the hook says the port is an allocation's relayed address.
    public private(set) var ownPorts: ClosedRange<UInt16>?
    /// Addresses relayed sockets are bound to and advertised as (port ignored). A wildcard is
    /// dropped: it names no address a peer could be given.
    public private(set) var relayAddresses: Set<Endpoint>
    /// This host's other addresses (interfaces) and those of `ownSockets`, port ignored;
    /// loopback and unspecified addresses always count as own. Needed when an own socket binds
    /// a wildcard, so its port is refused on every address that reaches this host.
    public private(set) var ownAddresses: Set<Endpoint>
    /// `relayAddresses` and `ownAddresses` with loopback and unspecified: the same test
    /// session latching uses.
    private let own: OwnAddresses

    public init(allowed: [AddressRange] = [], denied: [AddressRange] = [], ownSockets: [Endpoint] = [],
                ownPorts: ClosedRange<UInt16>? = nil, relayAddresses: [Endpoint] = [], ownAddresses: [Endpoint] = []) {
        self.allowed = allowed
        self.denied = denied
        self.ownSockets = Set(ownSockets.map { PeerPolicy.key($0, port: $0.port) })
        self.ownPorts = ownPorts
        self.relayAddresses = Set(relayAddresses.filter { !$0.isWildcard }.map { PeerPolicy.key($0, port: 0) })
        // A socket bound to a specific address makes that address one of ours.
        self.ownAddresses = Set((ownAddresses + ownSockets).filter { !$0.isWildcard }.map { PeerPolicy.key($0, port: 0) })
        own = OwnAddresses(relayAddresses + ownAddresses + ownSockets)
    }

    /// The verdict for a CreatePermission peer: the address alone (its port is ignored, as
    /// permissions are per IP address).
    public func decide(permission address: Endpoint) -> PeerDecision {
        let reached = address.embeddedIPv4
        if isDenied(address, reached) { return .refused(.operatorDenied) }
        if reached == nil && relayAddresses.contains(PeerPolicy.key(address, port: 0)) { return .allowed }
        return decideByLists(address, reached)
    }

    /// The verdict for a ChannelBind or Send peer, address and port. `isRelayedAddress` answers
    /// whether the endpoint, of its own family, is the relayed address of an allocation on this
    /// server (`RelayedPorts.contains`); it is asked only about addresses of `relayAddresses`,
    /// so a hook that looks at the family and port is enough: 127.0.0.1 at a port relayed only
    /// on ::1 (or the reverse), or 0.0.0.0 at a relayed port, which could reach another local
    /// service on that port, is not taken for a relayed address.
    public func decide(peer: Endpoint, isRelayedAddress: (Endpoint) -> Bool) -> PeerDecision {
        let reached = peer.embeddedIPv4
        if isDenied(peer, reached) { return .refused(.operatorDenied) }
        let target = reached ?? peer
        let key = PeerPolicy.key(target, port: target.port)
        if isOwnAddress(key) {
            if reached == nil && relayAddresses.contains(PeerPolicy.key(peer, port: 0)) && isRelayedAddress(peer) { return .allowed }
            if isOwnSocket(key) { return .refused(.relaySocket) }
        }
        return decideByLists(peer, reached)
    }

    /// Whether `peer` is one of the relay's own addresses at a pool port that `relayed` no
    /// longer holds: a channel or permission granted when the port was another allocation's
    /// relayed address must not reach whatever took the port from the pool since (a session
    /// leg, a relayed socket that is gone). Checked per ChannelData and Send, so it is a range
    /// compare and an atomic load first, a set lookup only for a pool port that is not relayed.
    @inline(__always)
    public func isStaleRelayedPeer(_ peer: Endpoint, relayed: RelayedPorts) -> Bool {
        guard let ownPorts, ownPorts.contains(peer.port), !relayed.contains(peer) else { return false }
        return own.contains(peer)
    }

    /// Rules 4 to 6. For an address that embeds another (`reached`), the form as written is
    /// refused by its own default block unless allowed as written (64:ff9b:1::/48 is a local
    /// network), then the address it reaches is judged as if given.
    private func decideByLists(_ address: Endpoint, _ reached: Endpoint?) -> PeerDecision {
        if let reached {
            if !PeerPolicy.anyContains(allowed, address), let reason = PeerPolicy.defaultBlock(address) {
                return .refused(reason)
            }
            return decideByLists(reached, nil)
        }
        if PeerPolicy.anyContains(allowed, address) { return .allowed }
        if let reason = PeerPolicy.defaultBlock(address) { return .refused(reason) }
        return .allowed
    }

    private func isDenied(_ address: Endpoint, _ reached: Endpoint?) -> Bool {
        if PeerPolicy.anyContains(denied, address) { return true }
        guard let reached else { return false }
        return PeerPolicy.anyContains(denied, reached)
    }

    private func isOwnSocket(_ key: Endpoint) -> Bool {
        let port = key.port
        if ownPorts?.contains(port) == true { return true }
        if ownSockets.contains(key) || ownSockets.contains(PeerPolicy.wildcard4(port))
            || ownSockets.contains(PeerPolicy.wildcard6(port)) {
            return true
        }
        // The kernel delivers datagrams for 0.0.0.0 and :: to a local address of its choosing:
        // any own socket on that port may be the one reached.
        guard PeerPolicy.isUnspecified(key) else { return false }
        var index = ownSockets.startIndex
        while index != ownSockets.endIndex {
            if ownSockets[index].port == port { return true }
            index = ownSockets.index(after: index)
        }
        return false
    }

    // Loops are written with indices: unspecialised for-in and contains(where:) allocate per
    // element in debug builds, and the allocation test runs in debug.
    private static func anyContains(_ ranges: [AddressRange], _ address: Endpoint) -> Bool {
        var index = 0
        while index < ranges.count {
            if ranges[index].contains(address) { return true }
            index += 1
        }
        return false
    }

    private static func isUnspecified(_ address: Endpoint) -> Bool {
        address.isWildcard || (address.isIPv4 && address.ipv4Address >> 24 == 0)
    }

    private func isOwnAddress(_ key: Endpoint) -> Bool { own.contains(key) }

    /// The reason `address` is in the default deny list, or nil; an address that embeds an
    /// IPv4 address is refused when either form is.
    public static func defaultReason(_ address: Endpoint) -> PeerRefusal? {
        if let reason = defaultBlock(address) { return reason }
        guard let reached = address.embeddedIPv4 else { return nil }
        return defaultBlock(reached)
    }

    private static func defaultBlock(_ address: Endpoint) -> PeerRefusal? {
        let blocks = PeerPolicy.defaultDenied
        var index = 0
        while index < blocks.count {
            if blocks[index].range.contains(address) { return blocks[index].reason }
            index += 1
        }
        return nil
    }

    /// The default deny list, each block with the reason it is counted under.
    public static let defaultDenied: [(range: AddressRange, reason: PeerRefusal)] = defaultBlocks.map {
        (try! AddressRange(cidr: $0.0), $0.1)
    }

    private static let defaultBlocks: [(String, PeerRefusal)] = [
        ("0.0.0.0/8", .unspecified),          // "this network": 0.0.0.0 reaches loopback (CVE-2020-26262)
        ("127.0.0.0/8", .loopback),
        ("::1/128", .loopback),
        ("::/96", .unspecified),              // :: (reaches loopback too) and deprecated ::a.b.c.d
        ("10.0.0.0/8", .privateNetwork),      // RFC 1918
        ("172.16.0.0/12", .privateNetwork),
        ("192.168.0.0/16", .privateNetwork),
        ("100.64.0.0/10", .privateNetwork),   // RFC 6598 carrier-grade NAT: the provider's inside
        ("fc00::/7", .privateNetwork),        // RFC 4193 unique local
        ("fec0::/10", .privateNetwork),       // deprecated site-local
        ("64:ff9b:1::/48", .privateNetwork),  // RFC 8215 local-use NAT64
        ("169.254.0.0/16", .linkLocal),       // includes cloud metadata services (169.254.169.254)
        ("fe80::/10", .linkLocal),
        ("224.0.0.0/4", .multicast),
        ("ff00::/8", .multicast),
        ("255.255.255.255/32", .broadcast),
        ("240.0.0.0/4", .reserved),           // RFC 1112 class E, never routed
        ("198.18.0.0/15", .reserved),         // RFC 2544 benchmarking, inside lab networks
        ("100::/64", .reserved),              // RFC 6666 discard-only
        ("192.0.2.0/24", .reserved),          // RFC 5737 and RFC 3849 documentation blocks: never a
        ("198.51.100.0/24", .reserved),       // real peer (coturn's recommended deny list has them)
        ("203.0.113.0/24", .reserved),
        ("2001:db8::/32", .reserved),
    ]

    /// Tables compare addresses without their IPv6 zone.
    private static func key(_ endpoint: Endpoint, port: UInt16) -> Endpoint {
        Endpoint(high: endpoint.high, low: endpoint.low, port: port)
    }

    private static func wildcard4(_ port: UInt16) -> Endpoint { Endpoint(ipv4: 0, port: port) }
    private static func wildcard6(_ port: UInt16) -> Endpoint { Endpoint(high: 0, low: 0, port: port) }
}

/// The outcome of a `PeerPolicy` check.
public enum PeerDecision: Equatable, Sendable {
    case allowed
    /// Answer 403 (Forbidden) and count the reason.
    case refused(PeerRefusal)
}

/// Why a peer was refused; the raw value is the stats label.
public enum PeerRefusal: String, CaseIterable, Sendable {
    case operatorDenied = "operator_denied"
    case relaySocket = "relay_socket"
    case unspecified
    case loopback
    case privateNetwork = "private"
    case linkLocal = "link_local"
    case multicast
    case broadcast
    case reserved

    /// The slot of this reason in a counter table (`TurnCounters.peerRefusals`).
    public var index: Int {
        switch self {
        case .operatorDenied: 0
        case .relaySocket: 1
        case .unspecified: 2
        case .loopback: 3
        case .privateNetwork: 4
        case .linkLocal: 5
        case .multicast: 6
        case .broadcast: 7
        case .reserved: 8
        }
    }
}
