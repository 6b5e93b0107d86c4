import DatagramEngine
import NetAddress

/// The addresses that reach this relay, port ignored: the relay and advertise addresses, this
/// host's interface addresses (a socket bound to a wildcard sends and receives on each of
/// them), loopback and the unspecified addresses. The one answer to "is this address ours?"
/// for both the TURN peer policy and session latching, so the two can never disagree.
///
/// Built once at start (building allocates); `contains` allocates nothing and takes no lock.
public struct OwnAddresses: Sendable {
    private let addresses: Set<Endpoint>

    /// Wildcards are dropped (they name no address); ports and IPv6 zones are ignored.
    public init(_ addresses: [Endpoint]) {
        self.addresses = Set(addresses.filter { !$0.isWildcard }.map(OwnAddresses.key))
    }

    /// Whether `address` (any port) reaches this host, written as it is or as an IPv6 form
    /// that embeds it (NAT64, 6to4, Teredo, ISATAP: `Endpoint.embeddedIPv4`).
    public func contains(_ address: Endpoint) -> Bool {
        if isOwn(OwnAddresses.key(address)) { return true }
        guard let reached = address.embeddedIPv4 else { return false }
        return isOwn(OwnAddresses.key(reached))
    }

    private func isOwn(_ key: Endpoint) -> Bool {
        key.isWildcard || (key.isIPv4 && key.ipv4Address >> 24 == 0) || key.isLoopback || addresses.contains(key)
    }

    private static func key(_ endpoint: Endpoint) -> Endpoint {
        Endpoint(high: endpoint.high, low: endpoint.low, port: 0)
    }
}
