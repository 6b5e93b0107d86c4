import ClientSockets
import NetAddress
import STUN

// The STUN codec names addresses with NetAddress's `Endpoint`. LoadGen meets that type only
// here, as a value at the codec's edge, and converts it to and from its own `SocketAddress`:
// the generator's sockets and cmsg code stay independent of the relay's engine (docs/ARCHITECTURE.md).

extension SocketAddress {
    /// The same address as the STUN codec's value type (XOR-PEER-ADDRESS and friends).
    package var endpoint: Endpoint? { Endpoint(host: host, port: port) }

    package init(_ endpoint: Endpoint) throws(LoadError) {
        try self.init(host: endpoint.hostText, port: endpoint.port)
    }
}

extension MessageBuilder {
    package mutating func append(_ type: AttributeType, address: SocketAddress) {
        if let endpoint = address.endpoint { append(type, xorAddress: endpoint) }
    }
}

extension StunMessage {
    /// ALTERNATE-SERVER (plain, not XORed) as a `SocketAddress`, nil when absent or malformed.
    package var alternateServer: SocketAddress? {
        guard let endpoint = (try? plainAddress(.alternateServer)) ?? nil else { return nil }
        return try? SocketAddress(endpoint)
    }

    /// An XOR address attribute as a `SocketAddress`, nil when absent or malformed.
    package func socketAddress(_ type: AttributeType) -> SocketAddress? {
        guard let endpoint = try? xorAddress(type) else { return nil }
        return try? SocketAddress(endpoint)
    }
}
