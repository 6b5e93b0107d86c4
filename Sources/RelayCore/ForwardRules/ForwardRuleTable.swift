import DatagramEngine
import NetAddress
import SystemSupport

/// Forward rules on one worker: a UDP proxy. Each client source gets its own upstream socket
/// from the port range; replies from the upstream go back to the client from the rule's listen
/// address. Only its worker's thread touches it.
///
/// The packet path is in this file; clients come and go (a new source, idle expiry) in
/// ForwardRuleTable+Clients.swift. Time comes from `now`, which the owner sets once per turn.
final class ForwardRuleTable {
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

    let engine: DatagramEngine
    let settings: RelaySettings
    let opener: PortOpener
    /// This worker's share of the egress cap (shared with its other tables).
    let egress: EgressShare
    // The tables below are read and written per datagram by this worker's thread only, and no
    // access to one overlaps another: the dynamic exclusivity checks (swift_beginAccess, about
    // 80 instructions each) buy nothing on them.
    /// Monotonic nanoseconds, set by the owner before each batch.
    @exclusivity(unchecked) var now: UInt64
    @exclusivity(unchecked) var rules: [RuleState] = []
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
    /// Tells the owner where a socket's datagrams go from now on (a listener, an upstream
    /// socket, or nowhere).

    init(engine: DatagramEngine, settings: RelaySettings, opener: PortOpener, now: UInt64,
         egress: EgressShare = EgressShare(nil)) {
        self.engine = engine
        self.settings = settings
        self.opener = opener
        self.egress = egress
        self.now = now
    }

    /// Opens this worker's listener of every rule (SO_REUSEPORT: each worker has one).
    func openListeners(_ shares: [RuleShared]) throws(SystemCallError) {
        for (index, rule) in settings.rules.enumerated() {
            var options = settings.socketOptions
            options.reusePort = true
            let listener = try engine.register(UDPSocket(binding: rule.listen, options: options), owner: OwnerTag(.listener, Int32(index)))
            rules.append(RuleState(rule: rule, listener: listener, shared: shares[index]))
            clientsByRule.append([:])
        }
    }

    @inline(__always)
    func fromClient(_ rule: Int, _ datagram: ReceivedDatagram) {
        let client: Int
        if let last = rules[rule].lastClient, last.source == datagram.source {
            client = Int(last.client)
        } else if let known = clientsByRule[rule][datagram.source] {
            client = Int(known)
        } else if let added = addClient(rule, datagram.source) {
            client = added
        } else {
            return
        }
        rules[rule].lastClient = (datagram.source, Int32(client))
        clients[client]!.lastHeard = now
        guard let marking = outgoing(datagram, rules[rule].rule.policy) else { return }
        engine.enqueue(socket: clients[client]!.upstreamSocket, to: rules[rule].rule.upstream,
                       trafficClass: marking, bytes: datagram.bytes)
    }

    @inline(__always)
    func fromUpstream(_ client: Int, _ datagram: ReceivedDatagram) {
        guard let state = clients[client] else { return drops.add(.unknownSource) }
        let rule = Int(state.rule)
        // Only the rule's upstream may answer through this socket: anything else would make
        // the relay a reflector towards its clients.
        guard datagram.source == rules[rule].rule.upstream else { return drops.add(.unknownSource) }
        clients[client]!.lastHeard = now
        guard let marking = outgoing(datagram, rules[rule].rule.policy) else { return }
        engine.enqueue(socket: rules[rule].listener, to: state.source, trafficClass: marking, bytes: datagram.bytes)
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
