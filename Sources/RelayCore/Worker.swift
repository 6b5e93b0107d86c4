import DatagramEngine
import STUN
import SystemSupport
import Glibc

/// One relay worker: a dedicated thread that owns an engine and dispatches each datagram, by
/// the owner tag of the socket it arrived on (`SocketRole`), to one of three tables: forward rules (their listeners
/// of this worker's SO_REUSEPORT share and the clients those brought), sessions (whole
/// sessions, all their sockets) and TURN (the allocations whose clients reach this worker).
/// The tables hold the state; the worker runs the loop, the control commands, housekeeping and
/// stats. Forwarding never crosses threads and takes no lock.
///
/// Per datagram: switch on the tag it carries, hand the datagram to its table (which applies
/// latching / limits / policy and enqueues to each destination borrowing the received bytes),
/// and flush once per turn.
final class Worker {
    let shared: WorkerShared
    let settings: RelaySettings
    let engine: DatagramEngine
    let forwardRules: ForwardRuleTable<DatagramEngine>
    let sessions: SessionTable<DatagramEngine>
    /// The TURN server's share on this worker, when TURN is configured. A constant, so the
    /// packet path calls into it without retaining it per datagram.
    let turnTable: TurnTable<DatagramEngine>?
    /// This worker's share of the egress cap, used by all three tables.
    let egress: EgressShare
    @exclusivity(unchecked) var drops = DropCounts()
    /// The turn's time, read once per turn, for the worker and every table.
    let clock = WorkerClock(now: MonotonicClock.now())
    var now: UInt64 { clock.now }
    var lastHousekeeping: UInt64 = 0
    var lastPublish: UInt64 = 0
    var lastCredit: UInt64 = 0
    /// Whether the next housekeeping gives free heap pages back again (TLS sessions ended in
    /// the last one).
    var trimPending = false

    init(shared: WorkerShared, settings: RelaySettings, turnState: TurnSharedState = TurnSharedState(),
         ruleShares: [RuleShared]) throws(SystemCallError) {
        self.shared = shared
        self.settings = settings
        engine = try DatagramEngine(configuration: settings.engine)
        let opener = PortOpener(engine: engine, ports: settings.ports, socketOptions: settings.socketOptions)
        egress = EgressShare(settings.egress)
        forwardRules = ForwardRuleTable(engine: engine, settings: settings, opener: opener, clock: clock, egress: egress)
        sessions = SessionTable(engine: engine, settings: settings, opener: opener, worker: shared.index, clock: clock, egress: egress)
        if let turn = settings.turn {
            turnTable = TurnTable(engine: engine, settings: turn, shared: turnState, ports: settings.ports,
                                  socketOptions: settings.socketOptions, clock: clock, egress: egress, offload: settings.fastPath)
        } else {
            turnTable = nil
        }
        forwardRules.accounting = settings.accounting
        sessions.accounting = settings.accounting
        turnTable?.accounting = settings.accounting
        try forwardRules.openListeners(ruleShares)
        try turnTable?.openListeners(udp: settings.turnListeners, tcp: settings.turnTCPListeners, tls: settings.turnTLSListeners,
                                     options: settings.socketOptions)
        shared.waker.withLock { $0 = engine.waker }
    }

    /// The worker's loop: runs until the control plane stops it.
    func run() {
        while shared.running.load(ordering: .relaxed) { turn(timeoutMilliseconds: 100) }
        shutDown()
    }

    /// One turn: forward what is ready (waiting only when nothing is), then the control work
    /// that is due. Timers are checked against one clock read per turn.
    func turn(timeoutMilliseconds: Int32) {
        // Work put off to this turn (TLS handshakes past the last turn's budget) must not wait.
        let waiting = turnTable?.hasDeferredStreamWork == true
        let count = engine.receive(timeoutMilliseconds: waiting ? 0 : waitLimit(timeoutMilliseconds))
        clock.now = MonotonicClock.now()
        for index in 0..<count { route(engine.received(index)) }
        if engine.streamEventCount > 0 || waiting { streamEvents() }
        engine.flush()
        turnTable?.flushed()
        egress.endTurn()
        if shared.pendingCommands.load(ordering: .relaxed) > 0 {
            for command in shared.takeCommands() { execute(command) }
        }
        if now &- lastHousekeeping > 500_000_000 { housekeeping() }
        if now &- lastCredit >= CreditRound.intervalNanoseconds { grantCredit() }
        if now &- lastPublish > 100_000_000 { publish() }
    }

    @inline(__always)
    func route(_ datagram: ReceivedDatagram) {
        let index = Int(datagram.owner.index)
        switch datagram.owner.socketRole {
        case .leg: sessions.fromLeg(index, datagram)
        case .listener: forwardRules.fromClient(index, datagram)
        case .upstream: forwardRules.fromUpstream(index, datagram)
        case .turnListener: turnTable.unsafelyUnwrapped.fromClient(datagram)
        case .turnRelay: turnTable.unsafelyUnwrapped.fromPeer(index, datagram)
        case .unowned, .turnStreamListener, .turnConnection: drops.add(.unknownSource)  // streams carry no datagrams
        }
    }

    /// Accepts, bytes and closes on TCP and TLS connections, in the order they happened.
    func streamEvents() {
        guard let turnTable else { return }
        turnTable.beginStreamTurn()
        for index in 0..<engine.streamEventCount {
            let event = engine.streamEvent(index)
            switch event.owner.socketRole {
            case .turnStreamListener:
                if case .accepted(_, let peer, _) = event.kind {
                    turnTable.accepted(event.stream, peer: peer, listener: event.owner)
                }
            case .turnConnection: turnTable.streamEvent(Int(event.owner.index), event.kind)
            default: break  // a stream given up by its owner: nothing to tell anyone
            }
        }
    }

    func housekeeping() {
        lastHousekeeping = now
        forwardRules.expireClients()
        sessions.expire()
        turnTable?.expire()
        // TLS sessions free most of their memory when they end, the engine the rest of their
        // streams' a turn or more later: one more pass after the last end gives that back too.
        let ended = turnTable?.takeEndedTLSSessions() == true
        if ended || trimPending { HeapTrim.releaseFreePages() }
        trimPending = ended
    }

    /// How long the turn may wait for datagrams: while the kernel forwards flows on credit, no
    /// longer than until the next credit round is due, since traffic the kernel carries wakes
    /// nobody here (a round put off for a whole wait let a limit refill unseen while the kernel
    /// held its credit).
    private func waitLimit(_ milliseconds: Int32) -> Int32 {
        let credited = !sessions.creditedPairs.isEmpty || (egress.isOn && !forwardRules.offloaded.isEmpty)
            || turnTable?.creditedAllocations.isEmpty == false
        guard credited else { return milliseconds }
        let due = lastCredit &+ CreditRound.intervalNanoseconds
        let now = MonotonicClock.now()
        guard due > now else { return 0 }
        return min(milliseconds, Int32((due &- now &+ 999_999) / 1_000_000))
    }

    /// A round of credit for the fast path's flows forwarded on credit (`CreditRound`).
    func grantCredit() {
        lastCredit = now
        CreditRound.run(sessions: sessions, forwardRules: forwardRules, turn: turnTable, egress: egress, now: now,
                        thresholds: settings.ecnThresholds)
    }

    /// A command from the control plane, run between batches.
    func execute(_ command: WorkerCommand) {
        switch command {
        case .create(let request, let id, let reply): reply(sessions.create(request, id: id))
        case .delete(let id, let reply): reply(sessions.delete(id))
        case .describe(let id, let reply): reply(sessions.describe(id))
        case .list(let reply): reply(sessions.list())
        case .turnAllocations(let limit, let reply):
            reply(turnTable?.describeAllocations(limit: limit, worker: shared.index) ?? [])
        }
    }

    func publish() {
        lastPublish = now
        var stats = WorkerStats(worker: shared.index)
        stats.engine = engine.counters
        stats.drops = drops
        stats.drops.merge(forwardRules.drops)
        stats.drops.merge(sessions.drops)
        stats.ceMarks = sessions.marks
        stats.ceMarks.merge(forwardRules.marks)
        stats.sessions = sessions.count
        stats.forwardClients = forwardRules.clientCount
        stats.sockets = engine.socketCount
        // Field by field: LifecycleCounts.merge goes through key paths, which allocate.
        stats.lifecycle.sessionsCreated = sessions.sessionsCreated
        stats.lifecycle.sessionsDeleted = sessions.sessionsDeleted
        stats.lifecycle.sessionsExpired = sessions.sessionsExpired
        stats.lifecycle.clientsCreated = forwardRules.clientsCreated
        stats.lifecycle.clientsExpired = forwardRules.clientsExpired
        if let table = turnTable {
            stats.turn = table.stats
            stats.ceMarks.merge(table.counters.ceMarks)
        }
        stats.lastTruncated = engine.lastTruncated
        stats.publishedAt = now
        let cpu = CPUTime.thread()  // this worker's thread only
        stats.cpuUserSeconds = cpu.userSeconds
        stats.cpuSystemSeconds = cpu.systemSeconds
        shared.published.withLock { $0 = stats }
    }

    func shutDown() {
        // The engine's eventfd closes with the engine: nobody may write to that number after.
        shared.waker.withLock { $0 = nil }
        sessions.shutDown()
        forwardRules.shutDown()
        turnTable?.shutDown()
        publish()
    }
}
