import DatagramEngine
import NetAddress
import RelayCore
import Glibc

/// Everything the server needs to start, after flags, the config file and the environment
/// have been merged and checked. Build one with `ServerOptions.parse`; the defaults here are the
/// contract's defaults, written only here (the help text reads them from `ServerOptions()`).
struct ServerOptions: Equatable, Sendable {
    /// The version the server reports in `--version`, /metrics `mediarelay_info` and logs.
    static let version = "0.1.0"
    static let tokenEnvironmentVariable = "MEDIARELAY_CONTROL_TOKEN"
    static let turnSecretEnvironmentVariable = "MEDIARELAY_TURN_SECRET"
    /// Each rule costs a listener socket per worker; more than this is a generated config gone wrong.
    static let maxForwardRules = 256
    /// What `advertiseAddress` becomes when the relay address is a wildcard and none is given.
    static let wildcardAdvertiseAddress = "127.0.0.1"

    /// Cores online now, clamped to the accepted worker range.
    static var onlineCores: Int {
        let count = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return min(max(count, OptionKey.workersRange.lowerBound), OptionKey.workersRange.upperBound)
    }

    /// The file given with `--config`, if any (kept for log lines).
    var configPath: String? = nil
    var engine: Engine = .auto
    var gso: Bool = true
    var gro: Bool = true
    var workers: Int = ServerOptions.onlineCores
    var forwards: [ForwardSpec] = []
    var ports = PortRange(low: 40000, high: 40999)
    var relayAddress = "0.0.0.0"
    /// Resolved by `parse`: 127.0.0.1 when `relayAddress` is a wildcard, else `relayAddress`,
    /// unless given explicitly.
    var advertiseAddress = ServerOptions.wildcardAdvertiseAddress
    var http = HostPort(host: "127.0.0.1", port: 9480)
    var controlToken: String? = nil
    var dscp: DSCPPolicy = .mirror
    var serviceClass: ServiceClass = .bestEffort
    var ecn: ECNPolicy = .preserve
    /// Mark ECT datagrams CE at rate limits and the egress cap (new sessions and allocations).
    var ecnMarking = true
    /// Percent of a limit's burst in use where ECT(1), then ECT(0), may start to be marked.
    var ecnL4SThreshold = ECNThresholds.defaultL4SPercent
    var ecnClassicThreshold = ECNThresholds.defaultClassicPercent
    /// Receive timestamps and marking by a datagram's wait in a worker's socket queue. Off
    /// unless asked for: the timestamps cost more CPU per datagram on mmsg and perpacket than a
    /// default may cost (bench/README.md, "Receive timestamps").
    var ecnBacklog = false
    /// Microseconds of that wait past which ECT(1), then ECT(0), is marked.
    var ecnBacklogL4SThreshold = BacklogThresholds.defaultL4SMicroseconds
    var ecnBacklogClassicThreshold = BacklogThresholds.defaultClassicMicroseconds
    /// Bytes per second the relay sends in all; 0: no cap.
    var egressRate = 0
    var logLevel: LogLevel = .info
    var logFormat: LogFormat = .text
    var drainSeconds = 0
    /// /readyz says 503 once any capacity in use reaches this fraction of its total.
    var readyThreshold = 0.9
    var idleTimeoutSeconds = 60
    var maxClients = 10000
    var maxSessions = 10000
    var batchSize = 64
    /// Jumbo frames pass by default; larger needs --max-datagram-size.
    var maxDatagramSize = 9000
    /// IP_FREEBIND on the relay's sockets: addresses that are not on the host at start are
    /// bound anyway (a floating address), and the start-up check for them is off.
    var freeBind = false

    // TURN (RFC 8656): parsed here, served by the relay's TURN tables.
    var turnListeners: [HostPort] = []
    var turnRealm = "mediarelay"
    /// `--turn-user` values, followed by the users of `turnUsersFile` once `parse` has read it.
    var turnUsers: [TURNUser] = []
    var turnUsersFile: String? = nil
    /// `--turn-secret` values (or `MEDIARELAY_TURN_SECRET`'s), followed by the secrets of
    /// `turnSecretFile` once `parse` has read it.
    var turnSecrets: [String] = []
    var turnSecretFile: String? = nil
    /// `--turn-nonce-secret`: the fleet's nonce key; without it the REST secrets give one.
    var turnNonceSecrets: [String] = []
    var turnAllowedPeers: [AddressRange] = []
    var turnDeniedPeers: [AddressRange] = []
    var turnMaxAllocations = 10000
    /// 0: no limit per user (a shared static user may serve every client of an application).
    var turnMaxAllocationsPerUser = 0
    /// Bytes per second per allocation; 0: no limit.
    var turnBandwidth = 0
    /// Percent of `ports` that relayed addresses may hold.
    var turnPortShare = 50
    var turnMaxChannels = TurnLimits().maxChannels
    /// Answers a second per source address to requests that did not authenticate; 0: no limit.
    var turnUnauthenticatedRate = TurnLimits().unauthenticatedRate
    /// Sibling relays new TURN clients are sent to when this one is full or draining.
    var turnAlternates: [TurnAlternateSpec] = []
    var turnAlternateDomain: String? = nil
    /// TURN over TCP and TLS, and the certificate chain and key the TLS listeners serve.
    var turnTCPListeners: [HostPort] = []
    var turnTLSListeners: [HostPort] = []
    var tlsCert: String? = nil
    var tlsKey: String? = nil
    var turnMaxConnections = TurnStreamLimits().maxConnections
    var turnMaxConnectionsPerSource = TurnStreamLimits().maxPerSource

    /// The kernel fast path: off unless asked for, since it needs CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON.
    var fastPath: FastPathMode = .off
    /// Where it attaches; empty: every UP interface that carries one of the relay's addresses.
    var fastPathInterfaces: [String] = []

    /// The TURN quotas a reload applies to the running relay.
    var turnLimits: TurnLimits {
        TurnLimits(maxChannels: turnMaxChannels, unauthenticatedRate: turnUnauthenticatedRate)
    }

    /// Whether any TURN listener is configured (UDP, TCP or TLS).
    var servesTURN: Bool { !turnListeners.isEmpty || !turnTCPListeners.isEmpty || !turnTLSListeners.isEmpty }

    /// Ports of the pool TURN may hold: at least one when TURN is on.
    var turnPortLimit: Int { max(1, ports.count * turnPortShare / 100) }
}

/// What the command line asks for: run the server, or print help or the version and exit 0.
enum ParsedCommand: Equatable, Sendable {
    case run(ServerOptions)
    /// The full help text, ending in a newline, for stdout.
    case help(String)
    /// `mediarelay 0.1.0`, for stdout.
    case version(String)
}

/// A refused command line, config file or environment. `description` is the one line to print on
/// stderr before exiting with `exitCode` (2): `mediarelay: --engine foo: expected one of ...`.
struct OptionError: Error, Equatable, CustomStringConvertible {
    /// The flag with its value, `config FILE: key "K"`, or the environment variable.
    let subject: String
    /// What is wrong and what is accepted.
    let problem: String

    var exitCode: Int32 { 2 }

    /// Always a single line, whatever bytes the user's input contained.
    var description: String { OptionError.oneLine("mediarelay: \(subject): \(problem)") }

    /// Replaces control characters (newlines included) so input cannot forge extra log lines.
    static func oneLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.properties.generalCategory == .control ? " " : scalar
        }))
    }

    /// Echoes user input at a bounded length so a huge value cannot flood the terminal.
    static func quoted(_ value: String) -> String {
        value.count <= 80 ? value : String(value.prefix(77)) + "..."
    }
}
