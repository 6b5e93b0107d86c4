import DatagramEngine

// PLACEHOLDER, replaced on merge by the real policy of branch turnb (same file name, same
// calls: decide(permission:), decide(peer:isRelayedAddress:), PeerDecision): the default-deny
// lists of issue 10. This one allows only peers in `allowed`, so it can never make an open
// relay.

/// Which peers a TURN allocation may reach.
public struct PeerPolicy: Sendable {
    public var allowed: [AddressRange]

    public init(allowed: [AddressRange] = []) { self.allowed = allowed }

    public func decide(permission address: Endpoint) -> PeerDecision { decideByList(address) }

    public func decide(peer: Endpoint, isRelayedAddress: (Endpoint) -> Bool) -> PeerDecision {
        isRelayedAddress(peer) ? .allowed : decideByList(peer)
    }

    // An index loop: contains(where:) allocates in debug builds, and Send indications ask
    // per datagram.
    private func decideByList(_ address: Endpoint) -> PeerDecision {
        var index = 0
        while index < allowed.count {
            if allowed[index].contains(address) { return .allowed }
            index += 1
        }
        return .refused(.notAllowed)
    }
}

public enum PeerDecision: Equatable, Sendable {
    case allowed
    case refused(PeerRefusal)
}

public enum PeerRefusal: String, CaseIterable, Sendable {
    case notAllowed = "not_allowed"
}
