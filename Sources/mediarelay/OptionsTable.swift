import DatagramEngine
import NetAddress
import RelayCore

/// Every server option that is both a command-line flag and a config-file key. One table feeds
/// the parser, the config loader and the help text, so the three cannot drift apart.
enum OptionKey: String, CaseIterable, Sendable {
    case engine, gso, gro, workers, forward, ports, relayAddress, advertiseAddress, http, controlToken,
        dscp, serviceClass, ecn, ecnMarking, ecnL4SThreshold, ecnClassicThreshold, ecnBacklog, ecnBacklogL4SThreshold,
        ecnBacklogClassicThreshold, logLevel, logFormat, drainSeconds, readyThreshold,
        idleTimeout, maxClients, maxSessions, batchSize, maxDatagramSize, egressRate, freeBind, turn, turnRealm, turnUser, turnUsersFile,
        turnSecret, turnSecretFile, turnNonceSecret, turnAllowedPeer, turnDeniedPeer, turnMaxAllocations, turnMaxAllocationsPerUser, turnBandwidth, turnPortShare,
        turnMaxChannels, turnUnauthenticatedRate, turnAlternate, turnAlternateDomain, turnTCP, turnTLS, tlsCert, tlsKey,
        turnMaxConnections, turnMaxConnectionsPerSource, fastPath, fastPathInterface

    /// How the value is written in the JSON config file.
    enum ConfigType: Sendable {
        /// `number`: a JSON number, integer or not (a fraction such as 0.9).
        case string, integer, number, stringArray
    }

    var flag: String {
        switch self {
        case .engine: "--engine"
        case .gso: "--gso"
        case .gro: "--gro"
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
        case .ecnMarking: "--ecn-marking"
        case .ecnL4SThreshold: "--ecn-l4s-threshold"
        case .ecnClassicThreshold: "--ecn-classic-threshold"
        case .ecnBacklog: "--ecn-backlog"
        case .ecnBacklogL4SThreshold: "--ecn-backlog-l4s-threshold"
        case .ecnBacklogClassicThreshold: "--ecn-backlog-classic-threshold"
        case .logLevel: "--log-level"
        case .logFormat: "--log-format"
        case .drainSeconds: "--drain-seconds"
        case .readyThreshold: "--ready-threshold"
        case .idleTimeout: "--idle-timeout"
        case .maxClients: "--max-clients"
        case .maxSessions: "--max-sessions"
        case .batchSize: "--batch-size"
        case .maxDatagramSize: "--max-datagram-size"
        case .egressRate: "--egress-rate"
        case .freeBind: "--free-bind"
        case .turn: "--turn"
        case .turnRealm: "--turn-realm"
        case .turnUser: "--turn-user"
        case .turnUsersFile: "--turn-users-file"
        case .turnSecret: "--turn-secret"
        case .turnSecretFile: "--turn-secret-file"
        case .turnNonceSecret: "--turn-nonce-secret"
        case .turnAllowedPeer: "--turn-allowed-peer"
        case .turnDeniedPeer: "--turn-denied-peer"
        case .turnMaxAllocations: "--turn-max-allocations"
        case .turnMaxAllocationsPerUser: "--turn-max-allocations-per-user"
        case .turnBandwidth: "--turn-bandwidth"
        case .turnPortShare: "--turn-port-share"
        case .turnMaxChannels: "--turn-max-channels"
        case .turnUnauthenticatedRate: "--turn-unauthenticated-rate"
        case .turnAlternate: "--turn-alternate"
        case .turnAlternateDomain: "--turn-alternate-domain"
        case .turnTCP: "--turn-tcp"
        case .turnTLS: "--turn-tls"
        case .tlsCert: "--tls-cert"
        case .tlsKey: "--tls-key"
        case .turnMaxConnections: "--turn-max-connections"
        case .turnMaxConnectionsPerSource: "--turn-max-connections-per-source"
        case .fastPath: "--fast-path"
        case .fastPathInterface: "--fast-path-interface"
        }
    }

    var configKey: String {
        switch self {
        case .idleTimeout: "idle_timeout_seconds"
        // A list of sibling relays reads better plural in a file (issue 19 names it so).
        case .turnAlternate: "turn_alternates"
        case .fastPathInterface: "fast_path_interfaces"
        default: String(flag.dropFirst(2).map { $0 == "-" ? "_" : $0 })
        }
    }

    var configType: ConfigType {
        switch self {
        case .workers, .drainSeconds, .idleTimeout, .maxClients, .maxSessions, .batchSize, .maxDatagramSize,
            .ecnL4SThreshold, .ecnClassicThreshold, .ecnBacklogL4SThreshold, .ecnBacklogClassicThreshold, .egressRate, .turnMaxAllocations,
            .turnMaxAllocationsPerUser, .turnBandwidth, .turnPortShare, .turnMaxChannels, .turnUnauthenticatedRate,
            .turnMaxConnections, .turnMaxConnectionsPerSource: .integer
        case .readyThreshold: .number
        case .forward, .turn, .turnUser, .turnSecret, .turnNonceSecret, .turnAllowedPeer, .turnDeniedPeer, .turnAlternate, .turnTCP, .turnTLS,
            .fastPathInterface: .stringArray
        default: .string
        }
    }

    /// Lists accumulate; any other option given twice is a mistake worth reporting.
    var isRepeatable: Bool { configType == .stringArray }

    /// How many values a list takes at most: each forward rule and TURN listener costs a socket
    /// per worker, and a list far longer than any real one is a generated config gone wrong.
    var maxCount: Int {
        switch self {
        case .forward: ServerOptions.maxForwardRules
        case .turn, .turnAlternate, .turnTCP, .turnTLS, .fastPathInterface: 64
        case .turnSecret, .turnNonceSecret: 16
        case .turnUser: 10_000
        default: 1024
        }
    }

    /// Tokens, passwords and secrets are never echoed back in an error message: it would end
    /// up in logs.
    var isSecret: Bool { self == .controlToken || self == .turnUser || self == .turnSecret || self == .turnNonceSecret }

    /// A file name, which the config file's directory resolves when relative.
    var isPath: Bool { self == .turnUsersFile || self == .turnSecretFile || self == .tlsCert || self == .tlsKey }

    /// An empty value's problem: most often a shell or systemd variable that was not set.
    static func emptyValue(_ problem: ValueProblem) -> String {
        "empty value (an unset variable?); \(problem.expected)"
    }

    var valueName: String {
        switch self {
        case .engine: "E"
        case .gso: "on|off"
        case .gro: "on|off"
        case .workers, .maxClients, .maxSessions, .batchSize: "N"
        case .forward: "LISTEN=UPSTREAM"
        case .ports: "LOW-HIGH"
        case .relayAddress, .advertiseAddress: "ADDR"
        case .http: "HOST:PORT"
        case .controlToken: "TOKEN"
        case .dscp: "mirror|class|zero"
        case .serviceClass: "NAME"
        case .ecn: "preserve|clear"
        case .ecnMarking, .ecnBacklog, .freeBind: "on|off"
        case .ecnL4SThreshold, .ecnClassicThreshold: "PERCENT"
        case .ecnBacklogL4SThreshold, .ecnBacklogClassicThreshold: "US"
        case .logLevel: "L"
        case .logFormat: "text|json"
        case .drainSeconds, .idleTimeout: "S"
        case .readyThreshold: "FRACTION"
        case .maxDatagramSize, .egressRate: "BYTES"
        case .turn: "HOST:PORT"
        case .turnRealm: "REALM"
        case .turnUser: "NAME:PASSWORD"
        case .turnUsersFile, .turnSecretFile: "PATH"
        case .turnSecret, .turnNonceSecret: "SECRET"
        case .turnAllowedPeer, .turnDeniedPeer: "CIDR"
        case .turnMaxAllocations, .turnMaxAllocationsPerUser, .turnMaxChannels, .turnUnauthenticatedRate: "N"
        case .turnBandwidth: "BYTES"
        case .turnPortShare: "PERCENT"
        case .turnAlternate: "[tls:]HOST:PORT"
        case .turnAlternateDomain: "NAME"
        case .turnTCP, .turnTLS: "HOST:PORT"
        case .tlsCert, .tlsKey: "FILE"
        case .turnMaxConnections, .turnMaxConnectionsPerSource: "N"
        case .fastPath: "off|auto|tc|xdp"
        case .fastPathInterface: "NAME"
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
    static let perUserRange = 0...1_000_000
    static let bandwidthRange = 0...1_000_000_000
    static let portShareRange = 1...100
    /// Up to every number ChannelBind accepts (0x4000-0x7FFF): more could never be bound.
    static let channelsRange = 1...16_384
    static let unauthenticatedRateRange = 0...100_000
    /// A connection holds a descriptor and buffers: a million is past any one machine.
    static let connectionsRange = 1...1_000_000
    /// A share of a limit's burst: 0 would mark a flow well under its limit, 100 only at the drop.
    static let thresholdRange = 1...99
    /// A datagram's wait in a socket queue, in microseconds: below 100 us a busy worker's own
    /// turn (a batch read while the last one was sent) would mark; above a second is no AQM.
    static let sojournRange = 100...1_000_000
    /// 1 Mbit/s to 100 Gbit/s: below, the 100 ms burst would not hold a jumbo datagram.
    static let egressRange = 125_000...12_500_000_000

    /// Parses `text` and stores it in `options`; the caller reports which flag or key failed.
    func apply(_ text: String, to options: inout ServerOptions) throws(ValueProblem) {
        switch self {
        case .engine: options.engine = try choice(text)
        case .gso: options.gso = try onOff(text)
        case .gro: options.gro = try onOff(text)
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
        case .http: options.http = try HostPort(option: text, allowsPortZero: true)
        case .controlToken: options.controlToken = try Self.token(text)
        case .dscp: options.dscp = try choice(text)
        case .serviceClass: options.serviceClass = try choice(text)
        case .ecn: options.ecn = try choice(text)
        case .ecnMarking: options.ecnMarking = try onOff(text)
        case .ecnL4SThreshold: options.ecnL4SThreshold = try integer(text, in: Self.thresholdRange)
        case .ecnClassicThreshold: options.ecnClassicThreshold = try integer(text, in: Self.thresholdRange)
        case .ecnBacklog: options.ecnBacklog = try onOff(text)
        case .ecnBacklogL4SThreshold: options.ecnBacklogL4SThreshold = try integer(text, in: Self.sojournRange)
        case .ecnBacklogClassicThreshold: options.ecnBacklogClassicThreshold = try integer(text, in: Self.sojournRange)
        case .logLevel: options.logLevel = try choice(text)
        case .logFormat: options.logFormat = try choice(text)
        case .drainSeconds: options.drainSeconds = try integer(text, in: Self.drainRange)
        case .readyThreshold: options.readyThreshold = try fraction(text)
        case .idleTimeout: options.idleTimeoutSeconds = try integer(text, in: Self.idleTimeoutRange)
        case .maxClients: options.maxClients = try integer(text, in: Self.capRange)
        case .maxSessions: options.maxSessions = try integer(text, in: Self.capRange)
        case .batchSize: options.batchSize = try integer(text, in: Self.batchRange)
        case .maxDatagramSize: options.maxDatagramSize = try integer(text, in: Self.datagramSizeRange)
        case .freeBind: options.freeBind = try onOff(text)
        case .egressRate:
            let rate = try integer(text, in: 0...Self.egressRange.upperBound)
            guard rate == 0 || Self.egressRange.contains(rate) else { throw ValueProblem(expected: "expected \(accepted)") }
            options.egressRate = rate
        case .turn: options.turnListeners.append(try HostPort(option: text))
        case .turnRealm: options.turnRealm = try TURNRealm.check(text)
        case .turnUser: options.turnUsers.append(try TURNUser(parsing: text))
        case .turnUsersFile:
            guard !text.isEmpty else { throw ValueProblem(expected: "expected \(accepted)") }
            options.turnUsersFile = text
        case .turnSecret: options.turnSecrets.append(try Self.visibleASCII(text, expected: accepted))
        case .turnSecretFile: options.turnSecretFile = try Self.path(text, expected: accepted)
        case .turnNonceSecret: options.turnNonceSecrets.append(try Self.visibleASCII(text, expected: accepted))
        case .turnAllowedPeer: options.turnAllowedPeers.append(try Self.range(text))
        case .turnDeniedPeer: options.turnDeniedPeers.append(try Self.range(text))
        case .turnMaxAllocations: options.turnMaxAllocations = try integer(text, in: Self.capRange)
        case .turnMaxAllocationsPerUser: options.turnMaxAllocationsPerUser = try integer(text, in: Self.perUserRange)
        case .turnBandwidth: options.turnBandwidth = try integer(text, in: Self.bandwidthRange)
        case .turnPortShare: options.turnPortShare = try integer(text, in: Self.portShareRange)
        case .turnMaxChannels: options.turnMaxChannels = try integer(text, in: Self.channelsRange)
        case .turnUnauthenticatedRate: options.turnUnauthenticatedRate = try integer(text, in: Self.unauthenticatedRateRange)
        case .turnAlternate: options.turnAlternates.append(try TurnAlternateSpec(parsing: text))
        case .turnAlternateDomain: options.turnAlternateDomain = try TurnAlternateDomain.check(text)
        case .turnTCP: options.turnTCPListeners.append(try HostPort(option: text))
        case .turnTLS: options.turnTLSListeners.append(try HostPort(option: text))
        case .tlsCert: options.tlsCert = try Self.path(text, expected: accepted)
        case .tlsKey: options.tlsKey = try Self.path(text, expected: accepted)
        case .turnMaxConnections: options.turnMaxConnections = try integer(text, in: Self.connectionsRange)
        case .turnMaxConnectionsPerSource: options.turnMaxConnectionsPerSource = try integer(text, in: Self.connectionsRange)
        case .fastPath: options.fastPath = try choice(text)
        case .fastPathInterface: options.fastPathInterfaces.append(try InterfaceName.check(text))
        }
    }

    /// Empties a list option, so a list given on the command line replaces the config file's.
    func clearList(in options: inout ServerOptions) {
        switch self {
        case .forward: options.forwards = []
        case .turn: options.turnListeners = []
        case .turnUser: options.turnUsers = []
        case .turnSecret: options.turnSecrets = []
        case .turnNonceSecret: options.turnNonceSecrets = []
        case .turnAllowedPeer: options.turnAllowedPeers = []
        case .turnDeniedPeer: options.turnDeniedPeers = []
        case .turnAlternate: options.turnAlternates = []
        case .turnTCP: options.turnTCPListeners = []
        case .turnTLS: options.turnTLSListeners = []
        case .fastPathInterface: options.fastPathInterfaces = []
        default: break
        }
    }
}
