import Glibc
// DSCP and ECN policies come from RelayCore and service classes from DatagramEngine: one
// definition each, shared by the options and the relay.
import RelayCore
import DatagramEngine

/// Which datagram backend the workers use. `auto` picks io_uring where the kernel (and any
/// seccomp profile) allows it, else mmsg; the choice and its reason are logged and in /v1/stats.
enum Engine: String, CaseIterable, Sendable {
    case auto, perpacket, mmsg, uring
}

/// Lowest severity of log lines written to stderr.
enum LogLevel: String, CaseIterable, Sendable {
    case debug, info, warning, error
}

/// A reason a single option value was refused; the parser adds which option or key it was.
struct ValueProblem: Error, Equatable {
    /// What is accepted, phrased for a person: "expected one of on, off".
    let expected: String
}

/// Numeric IP address literals only: the relay binds and advertises exactly what it is told,
/// and resolving names at start would make startup depend on DNS.
enum IPLiteral {
    static func isIPv4(_ text: String) -> Bool {
        var address = in_addr()
        return inet_pton(AF_INET, text, &address) == 1
    }

    static func isIPv6(_ text: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }

    static func isWildcard(_ text: String) -> Bool {
        if isIPv4(text) { return ipv4Bytes(text) == [0, 0, 0, 0] }
        if isIPv6(text) { return ipv6Bytes(text).allSatisfy { $0 == 0 } }
        return false
    }

    /// 127.0.0.0/8, ::1 and IPv4-mapped 127/8: the addresses only this host can reach.
    static func isLoopback(_ text: String) -> Bool {
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

    static let expected = "an IPv4 or IPv6 literal such as 192.0.2.10 or 2001:db8::1 (host names are not resolved)"
}

/// An IP literal and a port: `192.0.2.1:9480` or `[2001:db8::1]:9480`.
struct HostPort: Equatable, Hashable, Sendable, CustomStringConvertible {
    var host: String
    var port: UInt16

    var isIPv6: Bool { host.contains(":") }

    /// Brackets IPv6 hosts so the text parses back to the same value.
    var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Parses `HOST:PORT` or `[V6]:PORT`. Port 0 is refused unless `allowsPortZero`
    /// (only a listener may ask the kernel for any free port).
    init(parsing text: String, allowsPortZero: Bool = false) throws(ValueProblem) {
        let portRange = allowsPortZero ? "0...65535" : "1...65535"
        let expected = ValueProblem(
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

    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }
}

/// One `--forward LISTEN=UPSTREAM` rule: datagrams to `listen` go to `upstream`, each client
/// source with its own upstream socket from the port range.
struct ForwardSpec: Equatable, Sendable, CustomStringConvertible {
    var listen: HostPort
    var upstream: HostPort

    var description: String { "\(listen)=\(upstream)" }

    init(parsing text: String) throws(ValueProblem) {
        let expected = ValueProblem(
            expected: "expected LISTEN=UPSTREAM, each HOST:PORT or [IPV6]:PORT with an IP literal and a port in 1...65535"
        )
        let sides = text.split(separator: "=", omittingEmptySubsequences: false)
        guard sides.count == 2 else { throw expected }
        do {
            listen = try HostPort(parsing: String(sides[0]))
            upstream = try HostPort(parsing: String(sides[1]))
        } catch {
            throw expected
        }
    }

    init(listen: HostPort, upstream: HostPort) {
        self.listen = listen
        self.upstream = upstream
    }
}

/// The UDP ports sessions and forward clients bind, `LOW-HIGH` inclusive.
struct PortRange: Equatable, Sendable, CustomStringConvertible {
    var low: UInt16
    var high: UInt16

    var count: Int { Int(high) - Int(low) + 1 }
    var description: String { "\(low)-\(high)" }

    init(low: UInt16, high: UInt16) {
        self.low = low
        self.high = high
    }

    init(parsing text: String) throws(ValueProblem) {
        let expected = ValueProblem(expected: "expected LOW-HIGH with 1 <= LOW <= HIGH <= 65535")
        let sides = text.split(separator: "-", omittingEmptySubsequences: false)
        guard sides.count == 2,
            let low = PortRange.port(sides[0]), let high = PortRange.port(sides[1]), low <= high
        else { throw expected }
        self.low = low
        self.high = high
    }

    private static func port(_ text: Substring) -> UInt16? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }),
            let value = Int(text), (1...65535).contains(value)
        else { return nil }
        return UInt16(value)
    }
}
