import Glibc

/// Numeric IP address literals only: the relay binds and advertises exactly what it is told,
/// and resolving names at start would make startup depend on DNS.
public enum IPLiteral {
    public static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }

    public static func isIPv6(_ text: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }

    public static func isWildcard(_ text: String) -> Bool {
        if isIPv4(text) { return ipv4Bytes(text) == [0, 0, 0, 0] }
        if isIPv6(text) { return ipv6Bytes(text).allSatisfy { $0 == 0 } }
        return false
    }

    /// 127.0.0.0/8, ::1 and IPv4-mapped 127/8: the addresses only this host can reach.
    public static func isLoopback(_ text: String) -> Bool {
        if isIPv4(text) { return ipv4Bytes(text)[0] == 127 }
        guard isIPv6(text) else { return false }
        let bytes = ipv6Bytes(text)
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
        return Array(bytes[0..<12]) == mappedPrefix && bytes[12] == 127
    }

    private static func ipv4Bytes(_ text: String) -> [UInt8] {
        var address = in_addr()
        _ = inet_pton(AF_INET, text, &address)
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    private static func ipv6Bytes(_ text: String) -> [UInt8] {
        var address = in6_addr()
        _ = inet_pton(AF_INET6, text, &address)
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    public static let expected = "an IPv4 or IPv6 literal such as 192.0.2.10 or 2001:db8::1 (host names are not resolved)"
}

/// An IP literal and a port: `192.0.2.1:9480` or `[2001:db8::1]:9480`. The one parser of
/// addresses with a port for the relay's options, its config file and the load generator's.
public struct HostPort: Equatable, Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public var isIPv6: Bool { host.contains(":") }

    /// Brackets IPv6 hosts so the text parses back to the same value.
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Parses `HOST:PORT` or `[V6]:PORT`. Port 0 is refused unless `allowsPortZero`
    /// (only a listener may ask the kernel for any free port).
    public init(parsing text: String, allowsPortZero: Bool = false) throws(HostPortError) {
        let portRange = allowsPortZero ? "0...65535" : "1...65535"
        let expected = HostPortError(
            expected: "expected HOST:PORT or [IPV6]:PORT with HOST an IP literal (host names are not resolved) and PORT in \(portRange)"
        )
        guard let (hostPart, portPart, bracketed) = Endpoint.split(text) else { throw expected }
        // Brackets hold IPv6 only; without them only IPv4 (an IPv6 literal would be ambiguous
        // with its port, "::1:80").
        guard bracketed ? IPLiteral.isIPv6(String(hostPart)) : IPLiteral.isIPv4(String(hostPart)) else { throw expected }
        guard portPart.allSatisfy(\.isASCII), portPart.allSatisfy(\.isNumber), portPart.count <= 5,
            let port = Int(portPart), port <= 65535, allowsPortZero || port > 0
        else { throw expected }
        self.host = String(hostPart)
        self.port = UInt16(port)
    }

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }
}

/// Why a `HOST:PORT` text was refused: what is accepted, phrased for a person. The caller adds
/// which option or key it was.
public struct HostPortError: Error, Equatable, Sendable {
    public let expected: String

    public init(expected: String) { self.expected = expected }
}

extension HostPort {
    /// The endpoint this names (an IP literal always parses).
    public var endpoint: Endpoint { Endpoint(host: host, port: port)! }
}
