import DatagramEngine

// PLACEHOLDER, replaced on merge by the real policy of branch turnb (same file name): the
// default-deny CIDR lists of issue 10. This one allows only peers in `allowed`, so it can
// never make an open relay. The TURN table calls `allows` when a permission or channel is
// installed, never per datagram.

/// Which peers a TURN allocation may reach.
public struct PeerPolicy: Sendable {
    public var allowed: [AddressRange]

    public init(allowed: [AddressRange] = []) { self.allowed = allowed }

    public func allows(_ peer: Endpoint) -> Bool { allowed.contains { $0.contains(peer) } }
}
