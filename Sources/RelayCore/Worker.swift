import DatagramEngine
import SystemSupport
import Glibc

/// One relay worker: a dedicated thread that owns an engine, the forward-rule and TURN
/// listeners of its SO_REUSEPORT share, the clients those brought, whole sessions (all their
/// sockets) and its TURN allocations (in its TurnTable).
/// Forwarding never crosses threads and takes no lock.
///
/// Per datagram: look up the socket's role by slot, apply latching / limits / policy, enqueue
/// to each destination borrowing the received bytes, and flush once per turn.
final class Worker {
    enum SocketRole {
        case none
        case listener(rule: Int32)
        case upstream(client: Int32)
        case leg(Int32)
        /// A TURN listener or relayed socket: the TURN table knows which.
        case turn
    }

    struct LegState {
        var socket: SocketID
        var address: Endpoint
        var session: Int32
        var firstLeg: Int32
        var legCount: Int32
        var latched: Endpoint?
        var lastHeard: UInt64 = 0
        var policy: MarkingPolicy
        var relatchAfter: UInt64
        var relatch: RelatchPolicy
        var rateLimit: UInt64
        var tokens: UInt64 = 0
        var lastRefill: UInt64 = 0
        var counters = LegCounters()
    }

    struct SessionState {
        var id: String
        var request: SessionRequest
        var firstLeg: Int32
        var created: UInt64
        var idleTimeout: UInt64

        /// Its legs, then (in an `"rtcp": "pair"` session) their RTCP companions, in one block.
        var slotCount: Int { request.legs * request.rtcp.portsPerLeg }
    }

    struct RuleState {
        var rule: ForwardRule
        var listener: SocketID
        var shared: RuleShared
        /// The client the last datagram on this rule came from: a flow's datagrams come in
        /// runs, and each run then hashes its source once, not once a datagram. Cleared when
        /// that client is removed (`removeClient`), the one place a client's index is freed.
        var lastClient: (source: Endpoint, client: Int32)?
    }

    struct ClientState {
        var rule: Int32
        var source: Endpoint
        var upstreamSocket: SocketID
        var port: UInt16
        var lastHeard: UInt64
    }

    let shared: WorkerShared
    let settings: RelaySettings
    let engine: DatagramEngine
    // The tables below are read and written per datagram by this worker's thread only, and no
    // access to one overlaps another: the dynamic exclusivity checks (swift_beginAccess, about
    // 80 instructions each) buy nothing on them.
    @exclusivity(unchecked) var roles: [SocketRole] = []
    @exclusivity(unchecked) var legs: [LegState] = []
    /// Free blocks of legs by size, so a session's legs (and RTCP companions) stay contiguous.
    var freeLegBlocks: [[Int32]] = Array(repeating: [], count: SessionRequest.legRange.upperBound * 2 + 1)
    var sessions: [SessionState?] = []
    var freeSessions: [Int32] = []
    var sessionsByID: [String: Int32] = [:]
    @exclusivity(unchecked) var rules: [RuleState] = []
    @exclusivity(unchecked) var clients: [ClientState?] = []
    var freeClients: [Int32] = []
    @exclusivity(unchecked) var clientsByRule: [[Endpoint: Int32]] = []
    var clientCount = 0
    @exclusivity(unchecked) var drops = DropCounts()
    var lifecycle = LifecycleCounts()
    @exclusivity(unchecked) var now: UInt64 = MonotonicClock.now()
    var lastHousekeeping: UInt64 = 0
    var lastPublish: UInt64 = 0
    /// The TURN server's share on this worker, when TURN is configured.
    var turnTable: TurnTable?

    init(shared: WorkerShared, settings: RelaySettings, ruleShares: [RuleShared]) throws(SystemCallError) {
        self.shared = shared
        self.settings = settings
        engine = try DatagramEngine(configuration: settings.engine)
        for (index, rule) in settings.rules.enumerated() {
            var options = settings.socketOptions
            options.reusePort = true
            let listener = try engine.register(UDPSocket(binding: rule.listen, options: options))
            setRole(listener, .listener(rule: Int32(index)))
            rules.append(RuleState(rule: rule, listener: listener, shared: ruleShares[index]))
            clientsByRule.append([:])
        }
        if let turn = settings.turn {
            let table = TurnTable(engine: engine, settings: turn, shared: settings.turnShared, ports: settings.ports,
                                  socketOptions: settings.socketOptions, now: now)
            table.onSocket = { [unowned self] socket, owned in setRole(socket, owned ? .turn : .none) }
            for address in settings.turnListeners {
                var options = settings.socketOptions
                options.reusePort = true
                table.addListener(try engine.register(UDPSocket(binding: address, options: options)))
            }
            turnTable = table
        }
        shared.waker.withLock { $0 = engine.waker }
    }

    func setRole(_ socket: SocketID, _ role: SocketRole) {
        let slot = Int(socket.slot)
        while roles.count <= slot { roles.append(.none) }
        roles[slot] = role
    }

    /// The worker's loop: runs until the control plane stops it.
    func run() {
        while shared.running.load(ordering: .relaxed) { turn(timeoutMilliseconds: 100) }
        shutDown()
    }

    /// One turn: forward what is ready (waiting only when nothing is), then the control work
    /// that is due. Timers are checked against one clock read per turn.
    func turn(timeoutMilliseconds: Int32) {
        let count = engine.receive(timeoutMilliseconds: timeoutMilliseconds)
        now = MonotonicClock.now()
        turnTable?.now = now
        for index in 0..<count { route(engine.received(index)) }
        engine.flush()
        turnTable?.flushed()
        if shared.pendingCommands.load(ordering: .relaxed) > 0 {
            for command in shared.takeCommands() { execute(command) }
        }
        if now &- lastHousekeeping > 500_000_000 { housekeeping() }
        if now &- lastPublish > 100_000_000 { publish() }
    }

    @inline(__always)
    func route(_ datagram: ReceivedDatagram) {
        switch roles[Int(datagram.socket.slot)] {
        case .leg(let leg): fromLeg(Int(leg), datagram)
        case .listener(let rule): fromClient(Int(rule), datagram)
        case .upstream(let client): fromUpstream(Int(client), datagram)
        case .turn: turnTable.unsafelyUnwrapped.receive(datagram)
        case .none: drops.add(.unknownSource)
        }
    }

    func housekeeping() {
        lastHousekeeping = now
        expireClients()
        expireSessions()
        turnTable?.expire()
    }

    func publish() {
        lastPublish = now
        var stats = WorkerStats(worker: shared.index)
        stats.engine = engine.counters
        stats.drops = drops
        stats.sessions = sessionsByID.count
        stats.forwardClients = clientCount
        stats.sockets = engine.socketCount
        stats.lifecycle = lifecycle
        if let table = turnTable { stats.turn = table.stats }
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
        for index in sessions.indices { if let session = sessions[index] { removeSession(Int32(index), session) } }
        for index in clients.indices where clients[index] != nil { removeClient(Int32(index)) }
        turnTable?.shutDown()
        publish()
    }
}
