import BenchSupport
import ClientSockets
import CLoadGen
import RelayObservation
import SystemSupport
import Foundation
import NetAddress
import Glibc
import Synchronization
import TurnClientKit

/// One load run from start to finish: set up (sessions or forward-rule clients), latch the
/// legs, read the relay's stats, run the sending and receiving threads, read the stats again,
/// and clean up. Used by `mediarelay-load` and, in-process, by `compare`.
public struct LoadRun: Sendable {
    public let options: LoadOptions
    /// Whether to DELETE the sessions at the end (compare skips it: it stops the relay anyway).
    public let deleteSessions: Bool
    /// Where one-line progress and warnings go (stderr in the executable).
    public let log: @Sendable (String) -> Void

    /// The relay's settling time after the legs latched, before measuring.
    static let settleNs: UInt64 = 100_000_000

    public init(options: LoadOptions, deleteSessions: Bool = true, log: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.deleteSessions = deleteSessions
        self.log = log
    }

    /// Runs and returns the result. Errors are `LoadError`s whose message is ready for a user.
    public func run() throws(LoadError) -> LoadResult {
        let shape = options.shape
        let control: RelayControl? = try options.relay.map { url throws(LoadError) in
            RelayControl(client: try HTTPClient(url: url), token: options.token)
        }
        var sessions: [RelaySession] = []
        defer {
            if deleteSessions, let control { control.deleteSessions(sessions.map(\.id)) }
        }
        let stats: StatsSource?
        if let path = options.forwarderStats, let pid = options.relayPID {
            stats = .reference(ReferenceStats(path: path, pid: pid, engine: options.forwarderEngine))
        } else {
            stats = control.map { .relay($0) }
        }
        var turn: TurnClients?
        defer {
            if let turn {
                let unconfirmed = turn.release()
                if unconfirmed > 0 { log("\(unconfirmed) TURN allocations were not confirmed released; the server will expire them") }
            }
        }
        var setup: RunSetup
        if let server = options.turn, let credential = options.turnCredential {
            var settings = TurnClientSettings()
            settings.transport = options.turnTransport
            settings.host = Endpoint.split(server).map { String($0.host) }
            settings.tlsCA = options.tlsCA
            settings.echoPeer = try options.turnPeer.map { peer throws(LoadError) in try SocketAddress(hostPort: peer) }
            settings.peers = options.turnPeers
            settings.sendIndications = options.turnSendIndications
            settings.maxDatagram = shape.maxSize
            let clients = try TurnClients(server: SocketAddress(hostPort: server), count: options.streams,
                                          credential: credential, lifetime: options.turnLifetime, refreshSeconds: options.turnRefresh,
                                          tos: shape.tos, runSeconds: options.seconds, settings: settings)
            turn = clients
            let allocating = MonotonicClock.now()
            try clients.allocate(log: log)
            let took = Double(MonotonicClock.now() - allocating) / 1e9
            if took > 1 { log(String(format: "allocated %d TURN clients in %.1f s", clients.clients.count, took)) }
            setup = RunSetup.turn(clients, bidirectional: options.bidirectional)
        } else if let legs = options.legs {
            setup = try RunSetup.sessions(try RelaySession.listed(in: legs, count: options.streams),
                                          tos: shape.tos, bidirectional: options.bidirectional)
        } else if let target = options.target, let upstream = options.upstreamListen {
            setup = try RunSetup.forwardRule(target: SocketAddress(hostPort: target), upstream: SocketAddress(hostPort: upstream),
                                             streams: options.streams, tos: shape.tos, bidirectional: options.bidirectional)
        } else if let control {
            let creating = MonotonicClock.now()
            let outcome = control.createSessions(options.streams, fields: options.sessionFieldMembers)
            sessions = outcome.created
            if let error = outcome.error { throw error }
            let took = Double(MonotonicClock.now() - creating) / 1e9
            if took > 1 { log(String(format: "created %d sessions in %.1f s", sessions.count, took)) }
            setup = try RunSetup.sessions(sessions, tos: shape.tos, bidirectional: options.bidirectional)
        } else {
            throw LoadError("--relay: required (or --target with --upstream-listen, --legs, or --turn)")
        }
        if options.senderGSO, let socket = setup.flows.first?.socket, !socket.acceptsGSO() {
            throw LoadError("--sender-gso: this kernel refuses UDP_SEGMENT (UDP GSO needs Linux 4.18 or later)")
        }
        if options.arrivalStamps {
            // Before latching: the kernel turns stamping on a moment after the first socket asks.
            for socket in setup.receivingSockets where !socket.stampArrivals() {
                throw LoadError("SO_TIMESTAMPNS on a receiving socket: \(errnoText(errno))")
            }
        }
        let latched = try setup.latch(log: log)
        MonotonicClock.sleep(until: MonotonicClock.now() + Self.settleNs)

        var result = LoadResult()
        result.profile = options.profile
        result.streams = options.streams
        result.bidirectional = options.bidirectional
        result.offeredRate = shape.datagramsPerSecond * (options.bidirectional ? 2 : 1)
        result.warmupSeconds = options.warmup
        result.tos = shape.tos
        result.turnServer = options.turn
        result.latchedStreams = latched

        let statsBefore = try stats.map { source throws(LoadError) in try Self.quietStats(source) }
        let procBefore = options.relayPID.flatMap { ProcessCPU.read(pid: $0) }
        let cpuBefore = ownCPUSeconds()
        let signals = RunSignals()
        let start = MonotonicClock.now() + 2_000_000
        let end = start + UInt64(options.seconds * 1e9)
        let sender = TrafficSender(flows: setup.flows, shape: shape, start: start, end: end, gso: options.senderGSO)
        let congestion = options.congestionControl
        let feedback = congestion == .none ? nil : StreamFeedback(streams: setup.streamCount)
        let reactive = feedback.map { ReactiveSender(flows: setup.flows, shape: shape, control: congestion, feedback: $0, start: start, end: end) }
        let inbox = ControlInbox()
        let turnSockets = turn?.clients.compactMap { client -> Int32? in client.connection == nil ? client.fd : nil } ?? []
        let receiver = TrafficReceiver(sockets: setup.receivingSockets, connections: setup.receivingConnections,
                                       streams: setup.streamCount, latencyFrom: start + UInt64(options.warmup * 1e9),
                                       maxDatagram: shape.maxSize, turnClients: Set(turnSockets), inbox: inbox, feedback: feedback,
                                       spins: options.receiverSpins, stamped: options.arrivalStamps)
        // The pacer's forgiven ticks, or the controlled senders' mean rate in all.
        let senderOutcome = ThreadOutcome<(skipped: UInt64, controlledRate: Double?)>()
        let receiverOutcome = ThreadOutcome<ReceiverStatistics>()
        let placement = options.placement, log = self.log
        // A thread that cannot be placed still runs; the log says the run was not placed as asked.
        @Sendable func place(on mask: UInt64?) {
            guard let mask else { return }
            do { try CPUPlacement.pin(thread: 0, to: mask) } catch { log("warning: placement: \(error.message)") }
        }
        senderOutcome.start(name: "load-send") {
            place(on: placement?.sourceMask)
            if let reactive { return (0, reactive.run(signals).reduce(0, +)) }
            return (sender.run(signals), nil)
        }
        receiverOutcome.start(name: "load-receive") {
            place(on: placement?.sinkMask)
            if receiver.spins && lg_sched_idle() != 0 {
                log("warning: the receiving thread could not move to SCHED_IDLE (\(errnoText(errno))): it polls at normal priority")
            }
            return receiver.run(signals)
        }

        var lastLine = start
        var lastSent: UInt64 = 0, lastReceived: UInt64 = 0
        while !senderOutcome.isDone {
            MonotonicClock.sleep(until: MonotonicClock.now() + 50_000_000)
            if interruptRequested.load(ordering: .relaxed) { signals.stop.store(true, ordering: .relaxed) }
            if let turn, let failure = turn.refreshIfDue(now: MonotonicClock.now(), inbox: inbox) { log(failure) }
            let now = MonotonicClock.now()
            if options.progress, now >= lastLine + 1_000_000_000 {
                let sent = signals.sent.load(ordering: .relaxed), received = signals.received.load(ordering: .relaxed)
                let dt = Double(now - lastLine) / 1e9
                let loss = sent == 0 ? 0 : max(0, Double(Int64(sent) - Int64(received))) / Double(sent) * 100
                log(String(format: "%5.1fs  sent %8.0f/s  received %8.0f/s  loss %5.2f%%  p99 %8.1f us",
                           Double(now - start) / 1e9, Double(sent - lastSent) / dt, Double(received - lastReceived) / dt,
                           loss, Double(signals.intervalP99.load(ordering: .relaxed)) / 1000))
                lastLine = now
                lastSent = sent
                lastReceived = received
            }
        }
        let sendEnded = MonotonicClock.now()
        signals.receiveUntil.store(sendEnded + UInt64(options.drain * 1e9), ordering: .relaxed)
        let sent = senderOutcome.wait()
        result.pacerSkipped = sent.skipped
        result.congestionControl = congestion
        result.controlledRate = sent.controlledRate
        let statistics = receiverOutcome.wait()
        result.generatorCPUSeconds = ownCPUSeconds() - cpuBefore
        result.seconds = Double(min(sendEnded, end) - start) / 1e9
        result.sent = signals.sent.load(ordering: .relaxed)
        if let stats, let before = statsBefore {
            result.relay = try Self.settledDelta(stats, before: before, atLeast: Double(result.sent))
        }
        if let pid = options.relayPID, let before = procBefore, let after = ProcessCPU.read(pid: pid) {
            result.relayProcCPUSeconds = after.seconds - before.seconds
        }
        result.take(statistics)
        if let turn {
            result.turnRefreshes = turn.refreshes
            result.turnFailedRefreshes = turn.failedRefreshes
            result.turnRedirected = turn.redirected
            result.turnTransport = options.turnTransport
            result.turnEchoPeer = options.turnPeer
            result.turnPeers = options.turnPeers
            result.turnSendIndications = options.turnSendIndications
            let failed = turn.failed
            result.turnFailedClients = failed.count
            result.turnFailure = failed.first
            if let first = failed.first { log("\(failed.count) TURN clients' connections failed during the run; the first: \(first)") }
        }
        if interruptRequested.load(ordering: .relaxed) { log("interrupted: cleaning up") }
        return result
    }
}

extension LoadRun {
    /// The "before" figures, once the latching datagrams are all counted: the relay's snapshot
    /// of packets may trail its CPU figure, and a latch counted only after this read would make
    /// CPU per datagram look lower. Reads until packets_in has stood still for 250 ms (at most
    /// two seconds).
    static func quietStats(_ source: StatsSource) throws(LoadError) -> RelayStats {
        let deadline = MonotonicClock.now() + 2_000_000_000
        var stats = try source.read()
        var lastMove = MonotonicClock.now()
        while MonotonicClock.now() < deadline && MonotonicClock.now() - lastMove < 250_000_000 {
            MonotonicClock.sleep(until: MonotonicClock.now() + 50_000_000)
            let next = try source.read()
            if next.packetsIn != stats.packetsIn { lastMove = MonotonicClock.now() }
            stats = next
        }
        return stats
    }

    /// The relay publishes its counters to the HTTP thread as snapshots, which may trail the
    /// packets by a moment. Read until the relay has counted at least what we sent (everything
    /// we sent reached it, or it could not have been received), or its count stops moving, for
    /// at most a second.
    static func settledDelta(_ source: StatsSource, before: RelayStats, atLeast sent: Double) throws(LoadError) -> RelayDelta {
        let deadline = MonotonicClock.now() + 1_000_000_000
        var delta = RelayDelta(before: before, after: try source.read())
        var lastMove = MonotonicClock.now()
        while delta.packetsIn < sent {
            let now = MonotonicClock.now()
            // Datagrams the kernel dropped before the relay saw them never show up: give up
            // once the count has stood still for 250 ms.
            if now >= deadline || now - lastMove > 250_000_000 { break }
            MonotonicClock.sleep(until: now + 25_000_000)
            let next = RelayDelta(before: before, after: try source.read())
            if next.packetsIn != delta.packetsIn { lastMove = MonotonicClock.now() }
            delta = next
        }
        return delta
    }
}
