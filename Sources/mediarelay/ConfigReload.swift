/// What re-reading the config file (SIGHUP) does to the running options: the keys it applies
/// at once, the keys whose new value waits for a restart, and the options to run with now.
///
/// Contract: `running` is the old options with every reloadable value taken from the reloaded
/// ones; a key that needs a restart keeps its running value, so it is reported again on the
/// next reload until the relay restarts.
struct ConfigReload {
    let applied: [OptionKey]
    let needsRestart: [OptionKey]
    let running: ServerOptions
    private let old: ServerOptions

    init(running old: ServerOptions, reloaded: ServerOptions) {
        self.old = old
        let changed = OptionKey.allCases.filter { $0.text(in: old) != $0.text(in: reloaded) }
        applied = changed.filter(\.isReloadable)
        needsRestart = changed.filter { !$0.isReloadable }
        running = old.adoptingReloadable(from: reloaded)
    }

    /// One log line's worth: `applied log_level info -> debug; needs a restart: workers 2 -> 4`.
    var summary: String {
        guard !applied.isEmpty || !needsRestart.isEmpty else { return "nothing changed" }
        var parts: [String] = []
        if !applied.isEmpty {
            parts.append("applied " + applied.map { change($0, to: running) + note($0) }.joined(separator: ", "))
        }
        if !needsRestart.isEmpty {
            parts.append("needs a restart to take effect: " + needsRestart.map { change($0, to: nil) + restartNote($0) }.joined(separator: ", "))
        }
        return parts.joined(separator: "; ")
    }

    /// `workers 2 -> 4`; the token's value is never shown.
    private func change(_ key: OptionKey, to new: ServerOptions?) -> String {
        if key.isSecret { return "\(key.configKey) (changed)" }
        let before = OptionError.quoted(key.text(in: old))
        guard let new else { return "\(key.configKey) (running \(before))" }
        return "\(key.configKey) \(before) -> \(OptionError.quoted(key.text(in: new)))"
    }

    private func note(_ key: OptionKey) -> String {
        switch key {
        // The TURN server reads its marking once, at start (Server.turnSettings): without its
        // name here a TURN operator would read "applied" as applied to TURN.
        case .dscp, .ecn, .serviceClass: " (new sessions; forward rules and TURN keep theirs until a restart)"
        case .ecnMarking: " (new sessions and TURN allocations; forward rules keep theirs until a restart)"
        case .idleTimeout: " (new sessions and forward clients)"
        case .turnMaxChannels: " (new channels)"
        case .turnAlternate, .turnAlternateDomain: " (new redirects)"
        case .tlsCert, .tlsKey: " (new TLS connections)"
        default: ""
        }
    }

    private func restartNote(_ key: OptionKey) -> String {
        switch key {
        // An operator who turns it off by SIGHUP must not think the kernel stopped forwarding.
        case .fastPath, .fastPathInterface: " (the fast path attached at start keeps running, and its entries stay)"
        // The secrets of --turn-secret-file count under turn_secret: a rotated file shows there.
        case .turnSecret, .turnSecretFile: " (the TURN server reads its REST secrets at start)"
        default: ""
        }
    }
}

extension OptionKey {
    /// Whether a reload applies a changed value to the running relay; the rest take effect at
    /// the next start. Exhaustive on purpose: a new key (TURN users, say) must choose.
    var isReloadable: Bool {
        switch self {
        case .controlToken, .logLevel, .logFormat, .dscp, .serviceClass, .ecn, .ecnMarking, .drainSeconds, .readyThreshold, .idleTimeout,
            .maxClients, .maxSessions, .turnMaxChannels, .turnUnauthenticatedRate, .turnAlternate, .turnAlternateDomain:
            true
        // The certificate is read again on every SIGHUP (a certbot renewal), from these paths.
        case .tlsCert, .tlsKey:
            true
        // Listeners and the engines' room for connections are set up at start.
        case .turnTCP, .turnTLS, .turnMaxConnections, .turnMaxConnectionsPerSource:
            false
        case .engine, .gso, .gro, .workers, .forward, .ports, .relayAddress, .advertiseAddress, .http, .batchSize,
            .maxDatagramSize, .freeBind:
            false
        // The workers take these at start (the thresholds with every limit, the cap's bucket).
        case .ecnL4SThreshold, .ecnClassicThreshold, .egressRate:
            false
        // Receive timestamps are set on each socket as it is registered, and the thresholds
        // are the workers' from their start.
        case .ecnBacklog, .ecnBacklogL4SThreshold, .ecnBacklogClassicThreshold:
            false
        // The TURN server reads these at start; users and secrets may become reloadable once
        // it can swap them in (the two quotas above are atomics in TurnSharedState).
        case .turn, .turnRealm, .turnUser, .turnUsersFile, .turnSecret, .turnSecretFile, .turnNonceSecret, .turnAllowedPeer, .turnDeniedPeer,
            .turnMaxAllocations, .turnMaxAllocationsPerUser, .turnBandwidth, .turnPortShare:
            false
        // The program is loaded and attached once, at start; a reload leaves it and its
        // entries as they are.
        case .fastPath, .fastPathInterface:
            false
        }
    }

    /// The value in `options` as the command line would give it ("" when unset): what a reload
    /// compares to find the keys that changed.
    func text(in options: ServerOptions) -> String {
        switch self {
        case .engine: options.engine.rawValue
        case .gso: options.gso ? "on" : "off"
        case .gro: options.gro ? "on" : "off"
        case .workers: String(options.workers)
        case .forward: options.forwards.map(\.description).joined(separator: ",")
        case .ports: options.ports.description
        case .relayAddress: options.relayAddress
        case .advertiseAddress: options.advertiseAddress
        case .http: options.http.description
        case .controlToken: options.controlToken ?? ""
        case .dscp: options.dscp.rawValue
        case .serviceClass: options.serviceClass.rawValue
        case .ecn: options.ecn.rawValue
        case .ecnMarking: options.ecnMarking ? "on" : "off"
        case .ecnL4SThreshold: String(options.ecnL4SThreshold)
        case .ecnClassicThreshold: String(options.ecnClassicThreshold)
        case .ecnBacklog: options.ecnBacklog ? "on" : "off"
        case .ecnBacklogL4SThreshold: String(options.ecnBacklogL4SThreshold)
        case .ecnBacklogClassicThreshold: String(options.ecnBacklogClassicThreshold)
        case .logLevel: options.logLevel.rawValue
        case .logFormat: options.logFormat.rawValue
        case .drainSeconds: String(options.drainSeconds)
        case .readyThreshold: String(options.readyThreshold)
        case .idleTimeout: String(options.idleTimeoutSeconds)
        case .maxClients: String(options.maxClients)
        case .maxSessions: String(options.maxSessions)
        case .batchSize: String(options.batchSize)
        case .maxDatagramSize: String(options.maxDatagramSize)
        case .egressRate: String(options.egressRate)
        case .freeBind: options.freeBind ? "on" : "off"
        case .turn: options.turnListeners.map(\.description).joined(separator: ",")
        case .turnRealm: options.turnRealm
        // Secret, so only compared, never shown: a changed password counts as a change.
        case .turnUser: options.turnUsers.map { "\($0.name):\($0.password)" }.joined(separator: "\n")
        case .turnUsersFile: options.turnUsersFile ?? ""
        case .turnSecret: options.turnSecrets.joined(separator: "\n")
        case .turnSecretFile: options.turnSecretFile ?? ""
        case .turnNonceSecret: options.turnNonceSecrets.joined(separator: "\n")
        case .turnAllowedPeer: options.turnAllowedPeers.map(\.text).joined(separator: ",")
        case .turnDeniedPeer: options.turnDeniedPeers.map(\.text).joined(separator: ",")
        case .turnMaxAllocations: String(options.turnMaxAllocations)
        case .turnMaxAllocationsPerUser: String(options.turnMaxAllocationsPerUser)
        case .turnBandwidth: String(options.turnBandwidth)
        case .turnPortShare: String(options.turnPortShare)
        case .turnMaxChannels: String(options.turnMaxChannels)
        case .turnUnauthenticatedRate: String(options.turnUnauthenticatedRate)
        case .turnAlternate: options.turnAlternates.map(\.description).joined(separator: ",")
        case .turnAlternateDomain: options.turnAlternateDomain ?? ""
        case .turnTCP: options.turnTCPListeners.map(\.description).joined(separator: ",")
        case .turnTLS: options.turnTLSListeners.map(\.description).joined(separator: ",")
        case .tlsCert: options.tlsCert ?? ""
        case .tlsKey: options.tlsKey ?? ""
        case .turnMaxConnections: String(options.turnMaxConnections)
        case .turnMaxConnectionsPerSource: String(options.turnMaxConnectionsPerSource)
        case .fastPath: options.fastPath.rawValue
        case .fastPathInterface: options.fastPathInterfaces.joined(separator: ",")
        }
    }
}

extension ServerOptions {
    /// These options with the value of every reloadable key taken from `new`.
    func adoptingReloadable(from new: ServerOptions) -> ServerOptions {
        var next = self
        next.controlToken = new.controlToken
        next.logLevel = new.logLevel
        next.logFormat = new.logFormat
        next.dscp = new.dscp
        next.serviceClass = new.serviceClass
        next.ecn = new.ecn
        next.ecnMarking = new.ecnMarking
        next.drainSeconds = new.drainSeconds
        next.readyThreshold = new.readyThreshold
        next.idleTimeoutSeconds = new.idleTimeoutSeconds
        next.maxClients = new.maxClients
        next.maxSessions = new.maxSessions
        next.turnMaxChannels = new.turnMaxChannels
        next.turnUnauthenticatedRate = new.turnUnauthenticatedRate
        next.turnAlternates = new.turnAlternates
        next.turnAlternateDomain = new.turnAlternateDomain
        next.tlsCert = new.tlsCert
        next.tlsKey = new.tlsKey
        return next
    }
}
