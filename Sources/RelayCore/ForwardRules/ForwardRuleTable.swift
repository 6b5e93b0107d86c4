import DatagramEngine
import NetAddress
import SystemSupport

/// Forward rules on one worker: a UDP proxy. Each client source gets its own upstream socket
/// from the port range; replies from the upstream go back to the client from the rule's listen
/// address (under a wildcard listen address, from the address the client last sent to). Only its worker's thread touches it.
///
/// The packet path is in this file; clients come and go (a new source, idle expiry) in
/// ForwardRuleTable+Clients.swift. Time comes from the worker's `WorkerClock`, set once per turn.
/// Generic over the engine it asks (`TableEngine`): `DatagramEngine` in production.
final class ForwardRuleTable<Engine: TableEngine> {
    struct RuleState {
        var rule: ForwardRule
        var shared: RuleShared
    }

    /// What the packet path reads and writes of a rule, as plain values in memory this table
    /// allocates once (the rules are fixed when the listeners open): a datagram then neither
    /// copies a reference (RuleState's `shared`, retained and released by each read of a
    /// RuleState in an array) nor checks an array's uniqueness to note its client (callgrind
    /// counts of the mmsg path: bench/README, "Instructions and system calls per datagram").
    struct Route {
        var listener: SocketID
        var upstream: Endpoint
        var policy: MarkingPolicy
        /// The client the last datagram on this rule came from (-1: none): a flow's datagrams
        /// come in runs, and each run then hashes its source once, not once a datagram. Cleared
        /// when that client is removed (`removeClient`), the one place a client's index is freed.
        var lastSource: Endpoint
        var lastClient: Int32
    }

    struct ClientState {
        var rule: Int32
        var source: Endpoint
        var upstreamSocket: SocketID
        var port: UInt16
        var lastHeard: UInt64
        var created: UInt64
        /// The local address the client's datagrams reach (`ReceivedDatagram.localAddress`),
        /// which replies leave from; noted with `lastHeard`, once a turn.
        var localAddress: Endpoint
    }

    let engine: Engine
    let settings: RelaySettings
    let opener: PortOpener<Engine>
    /// This worker's share of the egress cap (shared with its other tables).
    let egress: EgressShare
    /// The worker's time this turn (`WorkerClock`: one source for every table).
    let clock: WorkerClock
    var now: UInt64 { clock.now }
    @exclusivity(unchecked) var rules: [RuleState] = []
    /// One `Route` per rule, in the order of `rules` (allocated for every rule at start,
    /// initialized as `openListeners` opens them).
    let routes: UnsafeMutablePointer<Route>
    @exclusivity(unchecked) var clients: [ClientState?] = []
    var freeClients: [Int32] = []
    @exclusivity(unchecked) var clientsByRule: [[Endpoint: Int32]] = []
    var clientCount = 0
    @exclusivity(unchecked) var drops = DropCounts()
    /// CE marks set at the egress cap and for the worker's backlog (rules have no limit of
    /// their own).
    @exclusivity(unchecked) var marks = CEMarkCounts()
    @exclusivity(unchecked) var random = MarkingRandom()
    var clientsCreated: UInt64 = 0
    var clientsExpired: UInt64 = 0
    /// Each client's counters, by client index (written per datagram, read when it ends).
    let clientCounters = EntryStore<ForwardClientCounters>()
    /// Where the record of each client that ends goes (`ForwardRuleTable+Accounting`); nil: none.
    var accounting: AccountingSink?
    /// The kernel fast path (`ForwardRuleTable+Offload`); nil: none.
    let offload: (any FlowOffload)?
    /// The clients the kernel carries, by client index.
    var offloaded: [Int32: OffloadedPair] = [:]
    /// The address each rule's upstream sockets (bound to a wildcard) send from, found once.
    var upstreamSources: [Int: Endpoint] = [:]

    init(engine: Engine, settings: RelaySettings, opener: PortOpener<Engine>, clock: WorkerClock,
         egress: EgressShare = EgressShare(nil)) {
        self.engine = engine
        self.settings = settings
        self.opener = opener
        self.egress = egress
        self.clock = clock
        offload = settings.fastPath
        routes = .allocate(capacity: settings.rules.count)
    }

    deinit {
        routes.deinitialize(count: rules.count)
        routes.deallocate()
    }

    /// Opens this worker's listener of every rule (SO_REUSEPORT: each worker has one).
    func openListeners(_ shares: [RuleShared]) throws(SystemCallError) {
        for (index, rule) in settings.rules.enumerated() {
            var options = settings.socketOptions
            options.reusePort = true
            let listener = try engine.openDatagramSocket(binding: rule.listen, options: options, owner: OwnerTag(.listener, Int32(index)),
                                                         dontFragment: nil).socket
            (routes + index).initialize(to: Route(listener: listener, upstream: rule.upstream, policy: rule.policy,
                                                  lastSource: Endpoint(ipv4: 0, port: 0), lastClient: -1))
            rules.append(RuleState(rule: rule, shared: shares[index]))
            clientsByRule.append([:])
        }
    }

    @inline(__always)
    func fromClient(_ rule: Int, _ datagram: ReceivedDatagram) {
        let route = routes + rule
        let client: Int
        if route.pointee.lastClient >= 0 && route.pointee.lastSource == datagram.source {
            client = Int(route.pointee.lastClient)
        } else if let known = clientsByRule[rule][datagram.source] {
            client = Int(known)
        } else if let added = addClient(rule, datagram.source, localAddress: datagram.localAddress) {
            client = added
            if offload != nil { offloadClient(added) }
        } else {
            return
        }
        route.pointee.lastSource = datagram.source
        route.pointee.lastClient = Int32(client)
        noteHeard(client, at: datagram.localAddress)
        guard let marking = outgoing(datagram, route.pointee.policy) else { return clientCounters[client].drops.add(.egress) }
        engine.enqueue(socket: clients[client]!.upstreamSocket, to: route.pointee.upstream,
                       trafficClass: marking, bytes: datagram.bytes)
        clientCounters[client].up.count(datagram.bytes.count, received: datagram.trafficClass.ecn, sent: marking.ecn)
    }

    @inline(__always)
    func fromUpstream(_ client: Int, _ datagram: ReceivedDatagram) {
        guard let state = clients[client] else { return drops.add(.unknownSource) }
        let rule = Int(state.rule)
        // Only the rule's upstream may answer through this socket: anything else would make
        // the relay a reflector towards its clients.
        let route = routes + rule
        guard datagram.source == route.pointee.upstream else {
            clientCounters[client].drops.add(.unknownSource)
            return drops.add(.unknownSource)
        }
        noteHeard(client)
        guard let marking = outgoing(datagram, route.pointee.policy) else { return clientCounters[client].drops.add(.egress) }
        engine.enqueue(socket: route.pointee.listener, to: state.source, from: state.localAddress, trafficClass: marking,
                       bytes: datagram.bytes)
        clientCounters[client].down.count(datagram.bytes.count, received: datagram.trafficClass.ecn, sent: marking.ecn)
    }

    /// Notes that `client` was heard in this turn. `now` moves once a turn, so the array is
    /// written (a uniqueness check) once a turn per client, not once a datagram.
    @inline(__always)
    private func noteHeard(_ client: Int) {
        if clients[client]!.lastHeard != now { clients[client]!.lastHeard = now }
    }

    /// Notes that `client` was heard in this turn at `localAddress`, which its replies leave
    /// from. The address changes only when the client turns to another of the relay's.
    @inline(__always)
    private func noteHeard(_ client: Int, at localAddress: Endpoint) {
        if clients[client]!.lastHeard != now || clients[client]!.localAddress != localAddress {
            clients[client]!.lastHeard = now
            clients[client]!.localAddress = localAddress
        }
    }

    /// The marking `datagram` leaves with: the rule's policy, then CE when it waited past the
    /// backlog threshold; nil when the egress cap drops it (counted). Rules mark as
    /// `--ecn-marking` said at start.
    @inline(__always)
    private func outgoing(_ datagram: ReceivedDatagram, _ policy: MarkingPolicy) -> TrafficClass? {
        var marking = policy.apply(datagram.trafficClass)
        if settings.backlogThresholds.marks(marking.ecn, receivedAt: datagram.receivedAt, now: now) && settings.ecnMarking {
            marking = marking.markedCE
            marks.add(.backlog)
        }
        return egressAdmits(datagram, marking)
    }

    /// The egress cap's verdict on `datagram` leaving with `marking`: the marking to send with,
    /// or nil when the cap drops it (counted).
    @inline(__always)
    private func egressAdmits(_ datagram: ReceivedDatagram, _ marking: TrafficClass) -> TrafficClass? {
        guard egress.isOn else { return marking }
        switch egress.police(datagram.bytes.count, marking.ecn, now: now, marks: settings.ecnMarking,
                             thresholds: settings.ecnThresholds, random: &random) {
        case .pass: return marking
        case .mark:
            marks.add(.egress)
            return marking.markedCE
        case .drop:
            drops.add(.egress)
            return nil
        }
    }
}
