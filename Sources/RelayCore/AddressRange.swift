import DatagramEngine

/// A CIDR block such as 192.0.2.0/24 or 2001:db8::/32; IPv4 blocks match IPv4 peers whether
/// they arrive on IPv4 or dual-stack sockets.
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    public let network: Endpoint
    /// Prefix length over the 128-bit (IPv4-mapped for IPv4) address.
    public let prefix: Int
    public let text: String

    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = Endpoint(host: String(parts[0]), port: 0) else { return nil }
        let width = address.isIPv4 ? 32 : 128
        var length = width
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...width).contains(given) else { return nil }
            length = given
        }
        network = address
        prefix = address.isIPv4 ? 96 + length : length
        self.text = text
    }

    public var description: String { text }

    public func contains(_ endpoint: Endpoint) -> Bool {
        AddressRange.masked(endpoint, prefix) == AddressRange.masked(network, prefix)
    }

    private static func masked(_ endpoint: Endpoint, _ prefix: Int) -> (UInt64, UInt64) {
        let highMask: UInt64 = prefix >= 64 ? .max : (prefix == 0 ? 0 : ~0 << (64 - prefix))
        let lowMask: UInt64 = prefix <= 64 ? 0 : (prefix == 128 ? .max : ~0 << (128 - prefix))
        return (endpoint.high & highMask, endpoint.low & lowMask)
    }
}
