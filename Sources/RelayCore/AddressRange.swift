import DatagramEngine
import NetAddress

/// A CIDR block such as 192.0.2.0/24 or 2001:db8::/32; IPv4 blocks match IPv4 peers whether
/// they arrive on IPv4 or dual-stack sockets.
///
/// Two ways in: `init?(parsing:)` is lenient (host bits may be set, as sessions' allowed sources
/// have always accepted), `init(cidr:)` is strict and says what is wrong, for operator options
/// where a typo must stop start-up instead of silently widening or narrowing a block.
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    public let network: Endpoint
    /// Prefix length over the 128-bit (IPv4-mapped for IPv4) address.
    public let prefix: Int
    public let text: String

    public init?(parsing text: String) {
        guard let (address, prefix) = try? AddressRange.parse(text) else { return nil }
        network = address
        self.prefix = prefix
        self.text = text
    }

    /// Parses `ADDRESS/LENGTH` (or a bare address, one host) strictly: the length is 1 to 3
    /// decimal digits within 0...32 for IPv4 and 0...128 for IPv6, the address is a literal
    /// without a zone, and no bit below the prefix may be set ("10.0.0.1/8" is refused: it is
    /// either a typo or a misunderstanding, and guessing would change what the rule covers).
    /// An IPv6 text such as ::ffff:0:0/96 counts its prefix over 128 bits.
    public init(cidr text: String) throws(AddressRangeError) {
        let (address, prefix) = try AddressRange.parse(text)
        let network = AddressRange.masked(address, prefix)
        guard network == (address.high, address.low) else {
            let writtenAsIPv6 = text.contains(":")
            let base = Endpoint(high: network.0, low: network.1, port: 0)
            let suggestion = writtenAsIPv6 && base.isIPv4 ? "::ffff:\(base.hostText)" : base.hostText
            let length = writtenAsIPv6 ? prefix : prefix - 96
            throw AddressRangeError(text: text, problem: "bits below the prefix are set; did you mean \(suggestion)/\(length)?")
        }
        self.network = address
        self.prefix = prefix
        self.text = text
    }

    public var description: String { text }

    public func contains(_ endpoint: Endpoint) -> Bool {
        AddressRange.masked(endpoint, prefix) == AddressRange.masked(network, prefix)
    }

    /// The address and the prefix over 128 bits; every shape problem but host bits.
    private static func parse(_ text: String) throws(AddressRangeError) -> (Endpoint, Int) {
        func refuse(_ problem: String) -> AddressRangeError { AddressRangeError(text: text, problem: problem) }
        guard !text.isEmpty, text.utf8.count <= 64 else { throw refuse("expected ADDRESS/LENGTH such as 192.0.2.0/24 or 2001:db8::/32") }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw refuse("more than one \"/\"") }
        let host = String(parts[0])
        guard !host.contains("%") else { throw refuse("a zone (%) has no place in a range") }
        guard let address = Endpoint(host: host, port: 0) else {
            throw refuse("\"\(host.prefix(64))\" is not an IPv4 or IPv6 literal")
        }
        // The text decides the width: ::ffff:0:0/96 is an IPv6-written block over 128 bits even
        // though its addresses are IPv4-mapped.
        let writtenAsIPv6 = host.contains(":")
        let width = writtenAsIPv6 ? 128 : 32
        var length = width
        if parts.count == 2 {
            let digits = parts[1]
            guard (1...3).contains(digits.utf8.count), digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let given = Int(digits), given <= width
            else { throw refuse("prefix length \"\(digits.prefix(8))\" is not an integer in 0...\(width)") }
            length = given
        }
        return (address, writtenAsIPv6 ? length : 96 + length)
    }

    private static func masked(_ endpoint: Endpoint, _ prefix: Int) -> (UInt64, UInt64) {
        let highMask: UInt64 = prefix >= 64 ? .max : (prefix == 0 ? 0 : ~0 << (64 - prefix))
        let lowMask: UInt64 = prefix <= 64 ? 0 : (prefix == 128 ? .max : ~0 << (128 - prefix))
        return (endpoint.high & highMask, endpoint.low & lowMask)
    }
}

/// Why a CIDR text was refused, naming the text: `"10.0.0.1/8" is not a CIDR block: ...`.
public struct AddressRangeError: Error, Equatable, CustomStringConvertible {
    public let text: String
    public let problem: String

    public var description: String { "\"\(text.prefix(64))\" is not a CIDR block: \(problem)" }
}
