import NetAddress
import RelayCore

/// The shorthand the peer-policy tests write addresses and blocks in.
protocol PeerPolicyFixture {}

extension PeerPolicyFixture {
    func ep(_ text: String) -> Endpoint {
        guard let endpoint = Endpoint(parsing: text) else { fatalError("bad test endpoint \(text)") }
        return endpoint
    }

    func cidr(_ text: String) -> AddressRange { try! AddressRange(cidr: text) }

    /// A relayed-address hook that knows no allocation.
    var never: (Endpoint) -> Bool { { _ in false } }
}
