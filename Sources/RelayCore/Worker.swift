import DatagramEngine
import SystemSupport
import Glibc

/// One relay worker: a dedicated thread that owns an engine, the forward-rule listeners of
/// its SO_REUSEPORT share, the clients those brought, and whole sessions (all their sockets).
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
    var roles: [SocketRole] = []
    var legs: [LegState] = []
    /// Free blocks of legs by size, so a session's legs (and RTCP companions) stay contiguous.
    var freeLegBlocks: [[Int32]] = Array(repeating: [], count: SessionRequest.legRange.upperBound * 2 + 1)
    var sessions: [SessionState?] = []
    var freeSessions: [Int32] = []
    var sessionsByID: [String: Int32] = [:]
    var rules: [RuleState] = []
    var clients: [ClientState?] = []
    var freeClients: [Int32] = []
    var clientsByRule: [[Endpoint: Int32]] = []
    var clientCount = 0
    var drops = DropCounts()
    var lifecycle = LifecycleCounts()
    var now: UInt64 = MonotonicClock.now()
    var lastHousekeeping: UInt64 = 0
    var lastPublish: UInt64 = 0

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
        for index in 0..<count { route(engine.received(index)) }
        engine.flush()
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
        case .none: drops.add(.unknownSource)
        }
    }

    func housekeeping() {
        lastHousekeeping = now
        expireClients()
        expireSessions()
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
        publish()
    }
}
