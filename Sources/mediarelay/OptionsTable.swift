import DatagramEngine
import NetAddress
import RelayCore
/// Every server option that is both a command-line flag and a config-file key. One table feeds
/// the parser, the config loader and the help text, so the three cannot drift apart.
enum OptionKey: String, CaseIterable, Sendable {
    case engine, gso, gro, workers, forward, ports, relayAddress, advertiseAddress, http, controlToken,
        dscp, serviceClass, ecn, ecnMarking, ecnL4SThreshold, ecnClassicThreshold, ecnBacklog, ecnBacklogL4SThreshold,
        ecnBacklogClassicThreshold, logLevel, logFormat, drainSeconds, readyThreshold,
        idleTimeout, maxClients, maxSessions, batchSize, maxDatagramSize, egressRate, turn, turnRealm, turnUser, turnUsersFile,
        turnSecret, turnNonceSecret, turnAllowedPeer, turnDeniedPeer, turnMaxAllocations, turnMaxAllocationsPerUser, turnBandwidth, turnPortShare,
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
        case .turn: "--turn"
        case .turnRealm: "--turn-realm"
        case .turnUser: "--turn-user"
        case .turnUsersFile: "--turn-users-file"
        case .turnSecret: "--turn-secret"
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
        case .ecnMarking, .ecnBacklog: "on|off"
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
        case .turnUsersFile: "PATH"
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

    /// The default the help text gives, read from a fresh `ServerOptions`, where every default
    /// is written once; lists and options that are unset by default are described instead.
    var defaultText: String {
        let defaults = ServerOptions()
        return switch self {
        case .engine: defaults.engine.rawValue
        case .gso: Self.onOff(defaults.gso)
        case .gro: Self.onOff(defaults.gro)
        case .workers: "number of online cores (\(defaults.workers) here)"
        case .forward: "none"
        case .ports: defaults.ports.description
        case .relayAddress: defaults.relayAddress
        case .advertiseAddress: "\(ServerOptions.wildcardAdvertiseAddress) when the relay address is a wildcard, else the relay address"
        case .http: defaults.http.description
        case .controlToken: "env \(ServerOptions.tokenEnvironmentVariable), else none"
        case .dscp: defaults.dscp.rawValue
        case .serviceClass: defaults.serviceClass.rawValue
        case .ecn: defaults.ecn.rawValue
        case .ecnMarking: Self.onOff(defaults.ecnMarking)
        case .ecnL4SThreshold: "\(defaults.ecnL4SThreshold)"
        case .ecnClassicThreshold: "\(defaults.ecnClassicThreshold)"
        case .ecnBacklog: Self.onOff(defaults.ecnBacklog)
        case .ecnBacklogL4SThreshold: Self.microseconds(defaults.ecnBacklogL4SThreshold)
        case .ecnBacklogClassicThreshold: Self.microseconds(defaults.ecnBacklogClassicThreshold)
        case .logLevel: defaults.logLevel.rawValue
        case .logFormat: defaults.logFormat.rawValue
        case .drainSeconds: "\(defaults.drainSeconds)"
        case .readyThreshold: "\(defaults.readyThreshold)"
        case .idleTimeout: "\(defaults.idleTimeoutSeconds)"
        case .maxClients: "\(defaults.maxClients)"
        case .maxSessions: "\(defaults.maxSessions)"
        case .batchSize: "\(defaults.batchSize)"
        case .maxDatagramSize: "\(defaults.maxDatagramSize)"
        case .egressRate: Self.zeroMeans(defaults.egressRate, "no cap")
        case .turn: "none (no TURN server)"
        case .turnRealm: defaults.turnRealm
        case .turnUser, .turnSecret, .turnAllowedPeer, .turnDeniedPeer: "none"
        case .turnUsersFile: "none"
        case .turnNonceSecret: "derived from --turn-secret when given, else a key of this process alone"
        case .turnMaxAllocations: "\(defaults.turnMaxAllocations)"
        case .turnMaxAllocationsPerUser: Self.zeroMeans(defaults.turnMaxAllocationsPerUser, "no limit per user")
        case .turnBandwidth: Self.zeroMeans(defaults.turnBandwidth, "no limit")
        case .turnPortShare: "\(defaults.turnPortShare)"
        case .turnMaxChannels: "\(defaults.turnMaxChannels)"
        case .turnUnauthenticatedRate:
            "\(defaults.turnUnauthenticatedRate) (a burst of \(defaults.turnUnauthenticatedRate * TurnLimits.burstSeconds))"
        case .turnAlternate: "none (refuse as without alternates)"
        case .turnAlternateDomain: "none"
        case .turnTCP, .turnTLS: "none"
        case .tlsCert, .tlsKey: "none (needed by --turn-tls)"
        case .turnMaxConnections: "\(defaults.turnMaxConnections)"
        case .turnMaxConnectionsPerSource: "\(defaults.turnMaxConnectionsPerSource)"
        case .fastPath: defaults.fastPath.rawValue
        case .fastPathInterface: "every UP interface that carries an address the relay's sockets use"
        }
    }

    private static func onOff(_ on: Bool) -> String { on ? "on" : "off" }

    /// "1000 (1 ms)": the value as given, then in milliseconds.
    private static func microseconds(_ value: Int) -> String {
        value % 1000 == 0 ? "\(value) (\(value / 1000) ms)" : "\(value)"
    }

    private static func zeroMeans(_ value: Int, _ meaning: String) -> String {
        value == 0 ? "0 (\(meaning))" : "\(value)"
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

    var accepted: String {
        switch self {
        case .engine: oneOf(Engine.allCases)
        case .gso: "on, off"
        case .gro: "on, off"
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
        case .ecnMarking: "on, off"
        case .ecnL4SThreshold: integers(Self.thresholdRange) + ", below --ecn-classic-threshold"
        case .ecnClassicThreshold: integers(Self.thresholdRange) + ", above --ecn-l4s-threshold"
        case .ecnBacklog: "on, off"
        case .ecnBacklogL4SThreshold: integers(Self.sojournRange) + ", below --ecn-backlog-classic-threshold"
        case .ecnBacklogClassicThreshold: integers(Self.sojournRange) + ", above --ecn-backlog-l4s-threshold"
        case .logLevel: oneOf(LogLevel.allCases)
        case .logFormat: oneOf(LogFormat.allCases)
        case .drainSeconds: integers(Self.drainRange)
        case .readyThreshold: "a decimal fraction above 0 and at most 1, such as 0.9"
        case .idleTimeout: integers(Self.idleTimeoutRange)
        case .maxClients, .maxSessions: integers(Self.capRange)
        case .batchSize: integers(Self.batchRange)
        case .maxDatagramSize: integers(Self.datagramSizeRange)
        case .egressRate: "0 (no cap) or " + integers(Self.egressRange) + " (1 Mbit/s to 100 Gbit/s)"
        case .turn: "HOST:PORT with an IP literal, [addr]:port for IPv6, PORT in 1...65535; repeatable, at most \(maxCount)"
        case .turnRealm: TURNRealm.accepted
        case .turnUser: TURNUser.accepted + "; repeatable"
        case .turnUsersFile: "a readable text file, at most 1 MiB: one NAME:PASSWORD per line, # starts a comment line"
        case .turnSecret, .turnNonceSecret: "1...\(Self.maxTokenLength) visible ASCII characters; repeatable, at most \(maxCount)"
        case .turnAllowedPeer, .turnDeniedPeer: "a CIDR block such as 192.0.2.0/24 or 2001:db8::/32 (no host bits) or one address; repeatable"
        case .turnMaxAllocations: integers(Self.capRange)
        case .turnMaxAllocationsPerUser: integers(Self.perUserRange)
        case .turnBandwidth: integers(Self.bandwidthRange)
        case .turnPortShare: integers(Self.portShareRange)
        case .turnMaxChannels: integers(Self.channelsRange)
        case .turnUnauthenticatedRate: integers(Self.unauthenticatedRateRange) + "; 0 means no limit"
        case .turnAlternate: TurnAlternateSpec.accepted + "; repeatable, at most \(maxCount)"
        case .turnAlternateDomain: TurnAlternateDomain.accepted
        case .turnTCP, .turnTLS: "HOST:PORT with an IP literal, [addr]:port for IPv6, PORT in 1...65535; repeatable, at most \(maxCount)"
        case .tlsCert: "a readable PEM file: the server's certificate, then its chain"
        case .tlsKey: "a readable PEM file: the private key of --tls-cert's certificate"
        case .turnMaxConnections: integers(Self.connectionsRange)
        case .turnMaxConnectionsPerSource: integers(Self.connectionsRange)
        case .fastPath: oneOf(FastPathMode.allCases)
        case .fastPathInterface: InterfaceName.accepted + "; repeatable, at most \(maxCount)"
        }
    }

    var summary: String {
        switch self {
        case .engine: "datagram backend; auto prefers uring and falls back to mmsg, saying why"
        case .gso: "send equal-size datagrams to one destination as one UDP_SEGMENT sendmsg"
        case .gro: "receive a burst of one flow as one UDP_GRO buffer and split it (mmsg, uring; 64 KiB receive buffers, see below)"
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
        case .ecnMarking:
            "at a rate limit or the egress cap, mark ECT datagrams CE before the bucket runs dry (off: only drop); "
                + "new sessions and TURN allocations"
        case .ecnL4SThreshold: "percent of a limit's burst in use from which ECT(1) (L4S) datagrams may be marked CE, on a ramp to 100%"
        case .ecnClassicThreshold:
            "percent of a limit's burst in use from which ECT(0) (classic) datagrams may be marked CE, as the square of a ramp"
        case .ecnBacklog:
            "take the kernel's receive time of every datagram (about 3% more CPU per datagram on mmsg) and mark ECT ones CE "
                + "that waited in a worker's socket queue past the thresholds below (the relay's own backlog), where --ecn-marking "
                + "and the session or allocation allow"
        case .ecnBacklogL4SThreshold: "microseconds an ECT(1) (L4S) datagram may wait in a socket queue before it is marked CE"
        case .ecnBacklogClassicThreshold: "microseconds an ECT(0) (classic) datagram may wait in a socket queue before it is marked CE"
        case .logLevel: "lowest level of log lines on stderr"
        case .logFormat: "log lines as text (key=value fields) or JSON (one object per line)"
        case .drainSeconds: "after SIGTERM/SIGINT, keep forwarding this long before exiting"
        case .readyThreshold: "/readyz answers 503 once any capacity (allocations, sessions, ports) is this full"
        case .idleTimeout: "forget a forward client after this many idle seconds"
        case .maxClients: "clients per forward rule"
        case .maxSessions: "sessions at once"
        case .batchSize: "datagrams per receive call at most"
        case .maxDatagramSize: "largest datagram forwarded; a longer one is dropped, counted as truncated and logged (first per minute)"
        case .egressRate:
            "bytes per second (UDP payload) the relay sends in all, shared by the workers: the operator's uplink; "
                + "past it datagrams are marked, then dropped and counted as egress"
        case .turn: "TURN (RFC 8656) listener over UDP, usually port 3478"
        case .turnRealm: "realm of the TURN long-term credentials"
        case .turnUser: "a static TURN user"
        case .turnUsersFile: "file of static TURN users, read at start"
        case .turnSecret: "shared secret of REST-API credentials (coturn's use-auth-secret); give two to rotate"
        case .turnNonceSecret:
            "secret the fleet's relays share so each accepts the nonces of the others (a browser sent on by 300 signs "
                + "its Allocate with the nonce it holds); the first issues, all verify, so give two to rotate"
        case .turnAllowedPeer: "peers TURN clients may reach even inside the default deny list"
        case .turnDeniedPeer: "peers TURN clients may never reach; wins over --turn-allowed-peer"
        case .turnMaxAllocations: "TURN allocations at once"
        case .turnMaxAllocationsPerUser: "TURN allocations at once per username"
        case .turnBandwidth: "bytes per second relayed per TURN allocation; past it datagrams are counted and dropped"
        case .turnPortShare: "percent of --ports that TURN relayed addresses may hold, so TURN cannot starve sessions"
        case .turnMaxChannels: "TURN channels per allocation; a ChannelBind for one more is refused with 508"
        case .turnUnauthenticatedRate:
            "answers per second (burst: \(TurnLimits.burstSeconds) s worth) per source address and worker to TURN requests "
                + "that did not authenticate; each request from the address that authenticates earns it 2 more (up to "
                + "\(TurnLimits.creditSeconds) s worth), so clients behind one NAT get in; past it they are counted and dropped "
                + "(Binding is always answered)"
        case .turnAlternate:
            "a sibling relay a new TURN client is sent to (300 Try Alternate, in turn, of the client's family) when this one "
                + "is full (allocations, relayed ports) or draining; tls: entries are for TLS clients"
        case .turnAlternateDomain: "ALTERNATE-DOMAIN sent with redirects of TLS clients (the alternates' certificate name)"
        case .turnTCP: "TURN listener over TCP (turn:HOST:PORT?transport=tcp), usually port 3478"
        case .turnTLS: "TURN listener over TLS (turns:HOST:PORT?transport=tcp), usually port 443 or 5349; needs --tls-cert and --tls-key"
        case .tlsCert: "certificate chain of the TLS listeners; SIGHUP reloads it with the key (certbot's fullchain.pem)"
        case .tlsKey: "private key of the TLS listeners (certbot's privkey.pem)"
        case .turnMaxConnections: "TURN connections over TCP and TLS at once; more are closed on accept and counted"
        case .turnMaxConnectionsPerSource: "TURN connections over TCP and TLS at once from one IP address"
        case .fastPath:
            "kernel fast path for established flows (docs/fastpath.md): tc, XDP (an interface that refuses it gets tc), "
                + "auto (XDP where the driver takes it natively, else tc); where it cannot load, one log line and user space"
        case .fastPathInterface: "an interface the fast path attaches to"
        }
    }

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

    private static func range(_ text: String) throws(ValueProblem) -> AddressRange {
        do throws(AddressRangeError) {
            return try AddressRange(cidr: text)
        } catch {
            throw ValueProblem(expected: "\(error.problem); expected a CIDR block such as 192.0.2.0/24 or 2001:db8::/32")
        }
    }

    /// A file name: not empty, no NUL (whether it can be read is checked at start).
    private static func path(_ text: String, expected: String) throws(ValueProblem) -> String {
        guard !text.isEmpty, text.utf8.count <= 4096, !text.utf8.contains(0) else { throw ValueProblem(expected: "expected \(expected)") }
        return text
    }

    /// The token travels in an `Authorization: Bearer` header, so spaces and control
    /// characters could never match.
    static func token(_ text: String) throws(ValueProblem) -> String {
        try visibleASCII(text, expected: OptionKey.controlToken.accepted)
    }

    /// 1...maxTokenLength visible ASCII characters: tokens and secrets are typed and pasted, and
    /// a space or control character in one is a copy mistake.
    private static func visibleASCII(_ text: String, expected: String) throws(ValueProblem) -> String {
        let visible = text.utf8.allSatisfy { (0x21...0x7e).contains($0) }
        guard !text.isEmpty, text.utf8.count <= maxTokenLength, visible else {
            throw ValueProblem(expected: "expected \(expected)")
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

    private func onOff(_ text: String) throws(ValueProblem) -> Bool {
        switch text {
        case "on": true
        case "off": false
        default: throw ValueProblem(expected: "expected one of on, off")
        }
    }

    private func integer(_ text: String, in range: ClosedRange<Int>) throws(ValueProblem) -> Int {
        guard text.utf8.count <= 12, text.allSatisfy({ $0.isASCII && $0.isNumber }),
            let value = Int(text), range.contains(value)
        else { throw ValueProblem(expected: "expected \(accepted)") }
        return value
    }

    /// Plain decimal notation only: "1e-1" or "nan" in a config is a mistake, not a number.
    private func fraction(_ text: String) throws(ValueProblem) -> Double {
        guard text.utf8.count <= 12, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let value = Double(text), value > 0, value <= 1
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
