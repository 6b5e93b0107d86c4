import DatagramEngine
import RelayCore

/// What the help text says of each option: its default and what it accepts, in words.
extension OptionKey {
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
        case .freeBind: Self.onOff(defaults.freeBind)
        case .turn: "none (no TURN server)"
        case .turnRealm: defaults.turnRealm
        case .turnUser, .turnAllowedPeer, .turnDeniedPeer: "none"
        case .turnSecret: "env \(ServerOptions.turnSecretEnvironmentVariable) when neither it nor --turn-secret-file gives one, else none"
        case .turnUsersFile, .turnSecretFile: "none"
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
        case .freeBind: "on, off"
        case .turn: "HOST:PORT with an IP literal, [addr]:port for IPv6, PORT in 1...65535; repeatable, at most \(maxCount)"
        case .turnRealm: TURNRealm.accepted
        case .turnUser: TURNUser.accepted + "; repeatable"
        case .turnUsersFile: "a readable text file, at most 1 MiB: one NAME:PASSWORD per line, # starts a comment line"
        case .turnSecret, .turnNonceSecret: "1...\(Self.maxTokenLength) visible ASCII characters; repeatable, at most \(maxCount)"
        case .turnSecretFile:
            "a readable text file, at most 1 MiB: one secret per line (1...\(Self.maxTokenLength) visible ASCII characters), "
                + "# starts a comment line; at most \(OptionKey.turnSecret.maxCount) secrets with --turn-secret's"
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
        case .ports:
            "UDP ports that sessions, forward clients and TURN relayed addresses (up to --turn-port-share of them) bind; "
                + "no UDP listener (--turn, --forward) may be inside"

        case .relayAddress:
            "address that session sockets and TURN relayed sockets bind; \"::\" relays both families, 127.0.0.1 also IPv6 on ::1; "
                + "an address not on this host stops start-up unless --free-bind is on"

        case .advertiseAddress:
            "address put in session answers and TURN's XOR-RELAYED-ADDRESS (the public side of a 1:1 NAT); needed when TURN "
                + "listens on an address other hosts reach while --relay-address is a wildcard"

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
        case .readyThreshold:
            "/readyz answers 503 once any capacity (TURN allocations, sessions, ports, TURN's share of them, TURN connections "
                + "over TCP and TLS) is this full"

        case .idleTimeout: "forget a forward client after this many idle seconds"
        case .maxClients: "clients per forward rule"
        case .maxSessions: "sessions at once"
        case .batchSize: "datagrams per receive call at most"
        case .maxDatagramSize: "largest datagram forwarded; a longer one is dropped, counted as truncated and logged (first per minute)"
        case .freeBind:
            "bind --relay-address and listener addresses that are not on this host yet (IP_FREEBIND), for a floating address "
                + "a failover moves here later; off: such an address stops start-up"
        case .egressRate:
            "bytes per second (UDP payload) the relay sends in all, shared by the workers: the operator's uplink; "
                + "past it datagrams are marked, then dropped and counted as egress"
        case .turn: "TURN (RFC 8656) listener over UDP, usually port 3478"
        case .turnRealm: "realm of the TURN long-term credentials"
        case .turnUser: "a static TURN user"
        case .turnUsersFile: "file of static TURN users, read at start; a relative path in --config is the config file's directory's"
        case .turnSecret:
            "shared secret of REST-API credentials (coturn's use-auth-secret); give two to rotate; a flag shows in ps, so "
                + "prefer --turn-secret-file or \(ServerOptions.turnSecretEnvironmentVariable)"
        case .turnSecretFile:
            "file of REST-API secrets, one a line, read at start (a changed file takes effect at the next start): a "
                + "credential made with any of them is accepted, so put the new one beside the old to rotate"

        case .turnNonceSecret:
            "secret the fleet's relays share so each accepts the nonces of the others (a browser sent on by 300 signs "
                + "its Allocate with the nonce it holds); the first issues, all verify, so give two to rotate"
        case .turnAllowedPeer: "peers TURN clients may reach even inside the default deny list"
        case .turnDeniedPeer: "peers TURN clients may never reach; wins over --turn-allowed-peer"
        case .turnMaxAllocations: "TURN allocations at once"
        case .turnMaxAllocationsPerUser: "TURN allocations at once per username"
        case .turnBandwidth:
            "bytes per second relayed per TURN allocation; near it ECT datagrams are marked CE (--ecn-marking), past it "
                + "datagrams are dropped and counted"

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

    private func oneOf<Choice: RawRepresentable>(_ cases: [Choice]) -> String where Choice.RawValue == String {
        "one of " + cases.map(\.rawValue).joined(separator: ", ")
    }

    private func integers(_ range: ClosedRange<Int>) -> String {
        "an integer in \(range.lowerBound)...\(range.upperBound)"
    }
}
