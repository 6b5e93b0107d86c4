import DatagramEngine
import Foundation
import Glibc
import NetAddress
import RelayCore
import RelayHTTP

/// The mediarelay process: relay workers, the HTTP thread, and the main thread waiting for
/// SIGTERM/SIGINT/SIGHUP (blocked everywhere else, taken here with sigtimedwait, so no signal
/// handler ever runs) while it pings the systemd watchdog.
struct Server {
    let options: ServerOptions
    /// The command line and environment the options came from: a reload parses them again, so
    /// flags keep winning over the file exactly as at start.
    let arguments: [String]
    let environment: [String: String]
    let log: Log
    let notifier: SystemdNotifier

    init(options: ServerOptions, arguments: [String], environment: [String: String]) {
        self.options = options
        self.arguments = arguments
        self.environment = environment
        log = Log(level: options.logLevel, format: options.logFormat)
        notifier = SystemdNotifier(environment: environment)
    }

    /// Everything the relay needs, from validated options (addresses were checked by the parser).
    func settings() -> RelaySettings {
        let relayAddress = Endpoint(host: options.relayAddress, port: 0)!
        var settings = RelaySettings(ports: options.ports.low...options.ports.high, relayAddress: relayAddress,
                                     advertiseAddress: Endpoint(host: options.advertiseAddress, port: 0)!)
        settings.hostAddresses = hostAddresses()
        settings.workers = options.workers
        settings.engine = EngineConfiguration(backend: Backend(rawValue: options.engine.rawValue),
                                              batchSize: options.batchSize, gso: options.gso, gro: options.gro,
                                              maxDatagramSize: options.maxDatagramSize, receiveTimestamps: options.ecnBacklog)
        settings.defaultPolicy = MarkingPolicy(dscp: options.dscp, ecn: options.ecn, serviceClass: options.serviceClass)
        settings.maxSessions = options.maxSessions
        settings.socketOptions.freeBind = options.freeBind
        // Formatted and written on the worker that ends the entry (one write(2) a line).
        let log = self.log
        settings.accounting = { record in log.record(AccountingLine.message, AccountingLine.fields(record)) }
        settings.ecnMarking = options.ecnMarking
        settings.ecnThresholds = ECNThresholds(l4sPercent: options.ecnL4SThreshold, classicPercent: options.ecnClassicThreshold)
        settings.backlogThresholds = BacklogThresholds(l4sMicroseconds: options.ecnBacklogL4SThreshold,
                                                       classicMicroseconds: options.ecnBacklogClassicThreshold)
        if options.egressRate > 0 {
            settings.egress = EgressBucket(rate: UInt64(options.egressRate), largestDatagram: options.maxDatagramSize)
        }
        settings.rules = options.forwards.map { spec in
            ForwardRule(listen: Endpoint(host: spec.listen.host, port: spec.listen.port)!,
                        upstream: Endpoint(host: spec.upstream.host, port: spec.upstream.port)!,
                        policy: settings.defaultPolicy, idleTimeoutSeconds: options.idleTimeoutSeconds,
                        maxClients: options.maxClients)
        }
        if options.servesTURN {
            settings.ports = PortPool(range: options.ports.low...options.ports.high, turnLimit: options.turnPortLimit)
            settings.turnListeners = options.turnListeners.map { Endpoint(host: $0.host, port: $0.port)! }
            settings.turnTCPListeners = options.turnTCPListeners.map { Endpoint(host: $0.host, port: $0.port)! }
            settings.turnTLSListeners = options.turnTLSListeners.map { Endpoint(host: $0.host, port: $0.port)! }
            if !settings.turnTCPListeners.isEmpty || !settings.turnTLSListeners.isEmpty {
                TurnStreamLimits.configure(&settings.engine, maxConnections: options.turnMaxConnections)
            }
            settings.turn = turnSettings(settings)
        }
        return settings
    }

    /// Runs until a signal has drained the relay; returns the exit code.
    func run() -> Int32 {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGHUP)
        // Blocked before any thread starts, so every thread inherits it and only the main
        // thread's sigtimedwait ever takes these signals.
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        raiseDescriptorLimit()
        // Before any socket: an address the host does not have stops start-up in one line, or
        // with --free-bind on is said once, so a floating address that never came is not a mystery.
        var strict = options
        strict.freeBind = false
        if let interfaces = try? HostInterfaces.read(), let missing = strict.addressNotOnHost(interfaces.addresses) {
            guard options.freeBind else {
                Log.emit(missing.description + "\n")
                return missing.exitCode
            }
            log.info("--free-bind on: \(missing.subject) is not on this host yet; bound anyway (IP_FREEBIND)")
        }
        var relaySettings = settings()
        // Before the relay: its tables install entries from their first flow on.
        let fastPath = FastPathStartup.start(options, addresses: datagramAddresses(relaySettings), log: log)
        relaySettings.fastPath = fastPath.kernel
        let relay = Relay(settings: relaySettings)
        guard loadCertificate(options, into: relay.turnState, reason: "start") else { return 2 }
        let engine: (backend: Backend, reason: String)
        do {
            engine = try relay.start()
        } catch {
            log.error("cannot start the relay: \(error)")
            return 1
        }
        log.info("engine \(engine.backend.rawValue) (\(engine.reason)), \(relay.workerCount) worker(s), gso \(options.gso ? "on" : "off"), gro \(options.gro ? "on" : "off")")
        for rule in relay.settings.rules { log.info("forwarding \(rule.listen) -> \(rule.upstream)") }
        log.info("session ports \(options.ports.low)-\(options.ports.high) on \(options.relayAddress), advertised as \(options.advertiseAddress)")
        log.info(ecnLine)
        if let turn = relay.settings.turn {
            let families = [turn.advertiseIPv4, turn.advertiseIPv6].compactMap { $0?.hostText }.joined(separator: " and ")
            let listeners = relay.settings.turnListeners.map { "udp \($0)" } + relay.settings.turnTCPListeners.map { "tcp \($0)" }
                + relay.settings.turnTLSListeners.map { "tls \($0)" }
            log.info("TURN on \(listeners.joined(separator: ", ")), realm \(options.turnRealm), relayed addresses on \(families)")
        }

        let reloadable = ReloadableSettings(.init(options))
        let api = ControlAPI(relay: relay, settings: reloadable, engine: engine.backend.rawValue,
                             engineReason: engine.reason, started: Date(), fastPath: fastPath)
        let router = api.router
        let http: HTTPServer
        do {
            http = try HTTPServer(host: options.http.host, port: options.http.port, priorityPaths: ["/healthz", "/readyz"]) {
                router.respond(to: $0)
            }
        } catch {
            log.error("\(error)")
            relay.stop()
            return 1
        }
        http.start()
        let shownHost = options.http.isIPv6 ? "[\(options.http.host)]" : options.http.host
        log.always("http listening on \(shownHost):\(http.boundPort)")
        notifyQuietly("READY=1\nSTATUS=forwarding with \(engine.backend.rawValue)")

        var running = options
        var taken: Int32 = 0
        var truncations = TruncationLog(limit: options.maxDatagramSize)
        while taken != SIGTERM && taken != SIGINT {
            taken = waitForSignal(&signals, seconds: 1, healthy: { relay.workersAreTurning() })
            if taken == SIGHUP { reload(&running, relay: relay, settings: reloadable) }
            if let line = truncations.line(relay.stats(), now: ProcessInfo.processInfo.systemUptime) { log.warning(line) }
        }
        log.info("received \(taken == SIGINT ? "SIGINT" : "SIGTERM"): refusing new sessions, draining for \(running.drainSeconds) s")
        relay.beginDrain()
        notifyQuietly("STOPPING=1")
        let deadline = Date().addingTimeInterval(Double(running.drainSeconds))
        while Date() < deadline {
            let next = waitForSignal(&signals, seconds: min(1, deadline.timeIntervalSinceNow), healthy: { relay.workersAreTurning() })
            // A reload still works while draining; a second SIGTERM/SIGINT ends the drain early.
            if next == SIGHUP { reload(&running, relay: relay, settings: reloadable) } else if next != 0 { break }
        }
        http.stop()
        relay.stop()
        // The workers' tables remove entries until they stop; then its links, and with them the
        // program, may go (the process's end takes them too).
        withExtendedLifetime(fastPath) {}
        log.info("stopped")
        return 0
    }

    /// SIGHUP: parses the command line and the config file again and applies what can change
    /// while running (token, log level, limits, TURN quotas and alternates, the ready threshold,
    /// defaults of new sessions); logs one line saying
    /// what changed and what waits for a restart. Sessions, sockets and workers are untouched,
    /// so no datagram is lost. A file that does not parse changes nothing.
    private func reload(_ running: inout ServerOptions, relay: Relay, settings: ReloadableSettings) {
        guard let path = running.configPath else {
            if running.turnTLSListeners.isEmpty {
                log.always("SIGHUP: started without --config, so there is no file to reload; nothing changed")
            } else {
                _ = loadCertificate(running, into: relay.turnState, reason: "SIGHUP")
            }
            return
        }
        let reloaded: ServerOptions
        do throws(OptionError) {
            guard case .run(let parsed) = try ServerOptions.parse(arguments: arguments, environment: environment) else { return }
            reloaded = parsed
        } catch {
            log.error(OptionError.oneLine("SIGHUP: keeping the running config; \(error.subject): \(error.problem)"))
            return
        }
        let change = ConfigReload(running: running, reloaded: reloaded)
        running = change.running
        apply(running, relay: relay, settings: settings)
        log.always("SIGHUP: reloaded \(OptionError.oneLine(path)): \(change.summary)")
        _ = loadCertificate(running, into: relay.turnState, reason: "SIGHUP")
    }

    /// Hands the reloadable options to whatever reads them.
    private func apply(_ options: ServerOptions, relay: Relay, settings: ReloadableSettings) {
        settings.replace(with: .init(options))
        log.setLevel(options.logLevel)
        log.setFormat(options.logFormat)
        relay.updateLimits(RelayLimits(maxSessions: options.maxSessions, maxClientsPerRule: options.maxClients,
                                       clientIdleTimeoutSeconds: options.idleTimeoutSeconds, turn: options.turnLimits,
                                       ecnMarking: options.ecnMarking))
        // The interfaces are read again: an address added since start is this relay too.
        let addresses = options.turnAddresses(hostAddresses: hostAddresses())
        noteAlternatesThatAreThisRelay(options, addresses)
        relay.updateAlternates(options.turnAlternatesInForce(leavingOut: addresses))
    }

    /// The addresses the relay's datagram sockets bind, which the fast path's interfaces must
    /// carry: session and relayed ports, UDP listeners of TURN and of forward rules.
    private func datagramAddresses(_ settings: RelaySettings) -> [Endpoint] {
        var addresses = [settings.relayAddress] + settings.turnListeners + settings.rules.map(\.listen)
        if let turn = settings.turn { addresses += [turn.relayIPv4, turn.relayIPv6].compactMap { $0 } }
        return addresses
    }

    /// What the limits and the backlog do with ECT datagrams, in one log line at start.
    private var ecnLine: String {
        let cap = options.egressRate > 0 ? "egress cap \(options.egressRate) B/s" : "no egress cap"
        guard options.ecnMarking else {
            return "ECN marking off: rate limits and the \(cap) drop only" + (options.ecnBacklog ? "" : ", no receive timestamps")
        }
        let backlog = options.ecnBacklog
            ? "; backlog: ECT(1) after \(options.ecnBacklogL4SThreshold) us in a socket queue, ECT(0) after \(options.ecnBacklogClassicThreshold) us"
            : "; backlog marking off (no receive timestamps)"
        return "ECN marking on at rate limits (\(cap)): ECT(1) from \(options.ecnL4SThreshold)% of a burst in use, "
            + "ECT(0) from \(options.ecnClassicThreshold)%, CE before the drop" + backlog
    }

    /// Says which alternates are this relay itself and so are never named (one list of the
    /// whole fleet may be given to every node).
    func noteAlternatesThatAreThisRelay(_ options: ServerOptions, _ addresses: TurnServerAddresses) {
        for alternate in options.alternatesThatAreThisRelay(addresses) {
            log.info("--turn-alternate \(alternate) is this relay (one of its own TURN listeners): left out of the alternates it names")
        }
    }

    /// Every port of the range is a socket; the soft limit on descriptors (often 1024) must not
    /// be what refuses sessions first. Raise it to the hard limit and say so if that is short.
    private func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        // Each TURN connection over TCP or TLS is a descriptor too.
        let streams = options.turnTCPListeners.isEmpty && options.turnTLSListeners.isEmpty ? 0 : options.turnMaxConnections
        let needed = UInt64(options.ports.count) + UInt64(options.workers * max(1, options.forwards.count)) + UInt64(streams) + 256
        if limit.rlim_cur < needed {
            let what = streams > 0 ? "the port range and --turn-max-connections" : "the port range"
            log.warning("the descriptor limit (\(limit.rlim_cur)) is below the \(needed) \(what) may need; raise LimitNOFILE / ulimit -n")
        }
    }

    /// Waits up to `seconds` for SIGTERM/SIGINT/SIGHUP (0 when none came), pinging the watchdog only
    /// while the workers are turning: a stuck worker lets systemd restart the relay.
    private func waitForSignal(_ signals: inout sigset_t, seconds: Double, healthy: () -> Bool) -> Int32 {
        let interval = notifier.watchdogInterval.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        let wait = max(0.01, min(seconds, interval ?? seconds))
        var timeout = timespec(tv_sec: Int(wait), tv_nsec: Int((wait - Double(Int(wait))) * 1e9))
        let taken = sigtimedwait(&signals, nil, &timeout)
        if interval != nil {
            if healthy() {
                notifyQuietly("WATCHDOG=1")
            } else {
                log.error("a worker has not turned for 5 s; withholding the systemd watchdog ping")
            }
        }
        return taken > 0 ? taken : 0
    }

    private func notifyQuietly(_ state: String) {
        do {
            try notifier.notify(state)
        } catch {
            log.warning("systemd notify failed: \(error)")
        }
    }
}
