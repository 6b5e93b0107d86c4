import DatagramEngine
import RelayCore
/// Every server option that is both a command-line flag and a config-file key. One table feeds
/// the parser, the config loader and the help text, so the three cannot drift apart.
enum OptionKey: String, CaseIterable, Sendable {
    case engine, gso, workers, forward, ports, relayAddress, advertiseAddress, http, controlToken,
        dscp, serviceClass, ecn, logLevel, drainSeconds, idleTimeout, maxClients, maxSessions,
        batchSize, maxDatagramSize

    /// How the value is written in the JSON config file.
    enum ConfigType: Sendable {
        case string, integer, stringArray
    }

    var flag: String {
        switch self {
        case .engine: "--engine"
        case .gso: "--gso"
        case .workers: "--workers"
        case .forward: "--forward"
        case .ports: "--ports"
        case .relayAddress: "--relay-address"
        case .advertiseAddress: "--advertise-address"
        case .http: "--http"
        case .controlToken: "--control-token"
        case .dscp: "--dscp"
        case .serviceClass: "--service-class"
        case .ecn: "--ecn"
        case .logLevel: "--log-level"
        case .drainSeconds: "--drain-seconds"
        case .idleTimeout: "--idle-timeout"
        case .maxClients: "--max-clients"
        case .maxSessions: "--max-sessions"
        case .batchSize: "--batch-size"
        case .maxDatagramSize: "--max-datagram-size"
        }
    }

    var configKey: String {
        switch self {
        case .idleTimeout: "idle_timeout_seconds"
        default: String(flag.dropFirst(2).map { $0 == "-" ? "_" : $0 })
        }
    }

    var configType: ConfigType {
        switch self {
        case .workers, .drainSeconds, .idleTimeout, .maxClients, .maxSessions, .batchSize, .maxDatagramSize: .integer
        case .forward: .stringArray
        default: .string
        }
    }

    /// Only forward rules accumulate; any other option given twice is a mistake worth reporting.
    var isRepeatable: Bool { self == .forward }

    /// The token is never echoed back in an error message: it would end up in logs.
    var isSecret: Bool { self == .controlToken }

    var valueName: String {
        switch self {
        case .engine: "E"
        case .gso: "on|off"
        case .workers, .maxClients, .maxSessions, .batchSize: "N"
        case .forward: "LISTEN=UPSTREAM"
        case .ports: "LOW-HIGH"
        case .relayAddress, .advertiseAddress: "ADDR"
        case .http: "HOST:PORT"
        case .controlToken: "TOKEN"
        case .dscp: "mirror|class|zero"
        case .serviceClass: "NAME"
        case .ecn: "preserve|clear"
        case .logLevel: "L"
        case .drainSeconds, .idleTimeout: "S"
        case .maxDatagramSize: "BYTES"
        }
    }

    var defaultText: String {
        switch self {
        case .engine: "auto"
        case .gso: "on"
        case .workers: "number of online cores (\(ServerOptions.onlineCores) here)"
        case .forward: "none"
        case .ports: "40000-40999"
        case .relayAddress: "0.0.0.0"
        case .advertiseAddress: "127.0.0.1 when the relay address is a wildcard, else the relay address"
        case .http: "127.0.0.1:9480"
        case .controlToken: "env \(ServerOptions.tokenEnvironmentVariable), else none"
        case .dscp: "mirror"
        case .serviceClass: "bestEffort"
        case .ecn: "preserve"
        case .logLevel: "info"
        case .drainSeconds: "0"
        case .idleTimeout: "60"
        case .maxClients: "10000"
        case .maxSessions: "10000"
        case .batchSize: "64"
        case .maxDatagramSize: "\(ServerOptions.defaultMaxDatagramSize)"
        }
    }

    static let workersRange = 1...256
    static let drainRange = 0...3600
    static let idleTimeoutRange = 1...86400
    static let capRange = 1...1_000_000
    static let batchRange = 1...1024
    /// Up to the largest UDP payload over IPv4 (65,535 - 20 - 8); below 512 even DNS breaks.
    static let datagramSizeRange = 512...65_507
    static let maxTokenLength = 1024

    var accepted: String {
        switch self {
        case .engine: oneOf(Engine.allCases)
        case .gso: "on, off"
        case .workers: integers(Self.workersRange)
        case .forward: "HOST:PORT=HOST:PORT, IPv6 as [addr]:port; repeatable, at most \(ServerOptions.maxForwardRules)"
        case .ports: "LOW-HIGH, 1 <= LOW <= HIGH <= 65535"
        case .relayAddress: "IPv4 or IPv6 literal; \"::\" means dual-stack"
        case .advertiseAddress: "IPv4 or IPv6 literal, not a wildcard"
        case .http: "HOST:PORT with an IP literal, [addr]:port for IPv6; port 0 means any free port"
        case .controlToken: "1...\(Self.maxTokenLength) visible ASCII characters"
        case .dscp: oneOf(DSCPPolicy.allCases)
        case .serviceClass: oneOf(ServiceClass.allCases)
        case .ecn: oneOf(ECNPolicy.allCases)
        case .logLevel: oneOf(LogLevel.allCases)
        case .drainSeconds: integers(Self.drainRange)
        case .idleTimeout: integers(Self.idleTimeoutRange)
        case .maxClients, .maxSessions: integers(Self.capRange)
        case .batchSize: integers(Self.batchRange)
        case .maxDatagramSize: integers(Self.datagramSizeRange)
        }
    }

    var summary: String {
        switch self {
        case .engine: "datagram backend; auto prefers uring and falls back to mmsg, saying why"
        case .gso: "send equal-size datagrams to one destination as one UDP_SEGMENT sendmsg"
        case .workers: "worker threads, each with its own sessions and sockets"
        case .forward: "forward datagrams sent to LISTEN to UPSTREAM, one upstream socket per client"
        case .ports: "UDP ports that sessions and forward clients bind"
        case .relayAddress: "address that session sockets bind"
        case .advertiseAddress: "address put in session answers"
        case .http: "control API, /healthz and /metrics listener"
        case .controlToken: "bearer token required by /v1/sessions*; needed when --http is not loopback"
        case .dscp: "DSCP of forwarded datagrams: copy, re-mark to the service class, or zero"
        case .serviceClass: "service class used by --dscp class"
        case .ecn: "ECN of forwarded datagrams: copy the codepoint, or clear it"
        case .logLevel: "lowest level of log lines on stderr"
        case .drainSeconds: "after SIGTERM/SIGINT, keep forwarding this long before exiting"
        case .idleTimeout: "forget a forward client after this many idle seconds"
        case .maxClients: "clients per forward rule"
        case .maxSessions: "sessions at once"
        case .batchSize: "datagrams per receive call at most"
        case .maxDatagramSize: "largest datagram forwarded; a longer one is dropped, counted as truncated and logged (first per minute)"
        }
    }

    /// Parses `text` and stores it in `options`; the caller reports which flag or key failed.
    func apply(_ text: String, to options: inout ServerOptions) throws(ValueProblem) {
        switch self {
        case .engine: options.engine = try choice(text)
        case .gso:
            switch text {
            case "on": options.gso = true
            case "off": options.gso = false
            default: throw ValueProblem(expected: "expected one of on, off")
            }
        case .workers: options.workers = try integer(text, in: Self.workersRange)
        case .forward: options.forwards.append(try ForwardSpec(parsing: text))
        case .ports: options.ports = try PortRange(parsing: text)
        case .relayAddress: options.relayAddress = try address(text)
        case .advertiseAddress:
            let address = try address(text)
            guard !IPLiteral.isWildcard(address) else {
                throw ValueProblem(expected: "a wildcard cannot be advertised; expected the address peers should send to")
            }
            options.advertiseAddress = address
        case .http: options.http = try HostPort(parsing: text, allowsPortZero: true)
        case .controlToken: options.controlToken = try Self.token(text)
        case .dscp: options.dscp = try choice(text)
        case .serviceClass: options.serviceClass = try choice(text)
        case .ecn: options.ecn = try choice(text)
        case .logLevel: options.logLevel = try choice(text)
        case .drainSeconds: options.drainSeconds = try integer(text, in: Self.drainRange)
        case .idleTimeout: options.idleTimeoutSeconds = try integer(text, in: Self.idleTimeoutRange)
        case .maxClients: options.maxClients = try integer(text, in: Self.capRange)
        case .maxSessions: options.maxSessions = try integer(text, in: Self.capRange)
        case .batchSize: options.batchSize = try integer(text, in: Self.batchRange)
        case .maxDatagramSize: options.maxDatagramSize = try integer(text, in: Self.datagramSizeRange)
        }
    }

    /// The token travels in an `Authorization: Bearer` header, so spaces and control
    /// characters could never match.
    static func token(_ text: String) throws(ValueProblem) -> String {
        let visible = text.utf8.allSatisfy { (0x21...0x7e).contains($0) }
        guard !text.isEmpty, text.utf8.count <= maxTokenLength, visible else {
            throw ValueProblem(expected: "expected \(OptionKey.controlToken.accepted)")
        }
        return text
    }

    private func choice<Choice: RawRepresentable & CaseIterable>(_ text: String) throws(ValueProblem) -> Choice
    where Choice.RawValue == String {
        guard let value = Choice(rawValue: text) else {
            throw ValueProblem(expected: "expected \(accepted)")
        }
        return value
    }

    private func integer(_ text: String, in range: ClosedRange<Int>) throws(ValueProblem) -> Int {
        guard text.utf8.count <= 12, text.allSatisfy({ $0.isASCII && $0.isNumber }),
            let value = Int(text), range.contains(value)
        else { throw ValueProblem(expected: "expected \(accepted)") }
        return value
    }

    private func address(_ text: String) throws(ValueProblem) -> String {
        guard IPLiteral.isIPv4(text) || IPLiteral.isIPv6(text) else {
            throw ValueProblem(expected: "expected \(IPLiteral.expected)")
        }
        return text
    }

    private func oneOf<Choice: RawRepresentable>(_ cases: [Choice]) -> String where Choice.RawValue == String {
        "one of " + cases.map(\.rawValue).joined(separator: ", ")
    }

    private func integers(_ range: ClosedRange<Int>) -> String {
        "an integer in \(range.lowerBound)...\(range.upperBound)"
    }
}
