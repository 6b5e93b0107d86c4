import DatagramEngine
import NetAddress
import SystemSupport
import Glibc

/// Sessions on one worker: legs that latch onto the first source that sends to them, and
/// forward to every other latched leg of their session. Only its worker's thread touches it.
///
/// The packet path (`fromLeg` and the latching it may need) is in this file and allocates
/// nothing; creating, deleting, describing and expiring sessions are the control path, in
/// SessionTable+Control.swift. Time comes from the worker's `WorkerClock`, set once per turn.
/// Generic over the engine it asks (`TableEngine`): `DatagramEngine` in production.
final class SessionTable<Engine: TableEngine> {
    struct LegState {
        var socket: SocketID
        var address: Endpoint
        var session: Int32
        var firstLeg: Int32
        var legCount: Int32
        var latched: Endpoint?
        var lastHeard: UInt64 = 0
        /// The local address the latched peer last sent to (`ReceivedDatagram.localAddress`),
        /// which what the leg sends it leaves from: on a leg bound to a wildcard address the
        /// peer expects its media from the address it sends to.
        var localAddress = Endpoint(high: 0, low: 0, port: 0)
        var policy: MarkingPolicy
        var relatchAfter: UInt64
        var relatch: RelatchPolicy
        var limits: LegLimits
        var ecnMarking: Bool
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

    let engine: Engine
    let settings: RelaySettings
    let opener: PortOpener<Engine>
    /// This worker's share of the egress cap (shared with its other tables).
    let egress: EgressShare
    /// Where in a limit's burst marking starts (the relay's setting, the same for every leg).
    let thresholds: ECNThresholds
    /// The sojourn past which a datagram is marked for the worker's own backlog.
    let backlog: BacklogThresholds
    /// The addresses that reach this relay, built once from the settings (see `isRelayOwn`).
    let ownAddresses: OwnAddresses
    /// The worker's index, for session descriptions.
    let worker: Int
    /// The worker's time this turn (`WorkerClock`: one source for every table).
    let clock: WorkerClock
    var now: UInt64 { clock.now }
    let legs = EntryStore<LegState>()
    /// Free blocks of legs by size, so a session's legs (and RTCP companions) stay contiguous.
    var freeLegBlocks: [[Int32]] = Array(repeating: [], count: SessionRequest.legRange.upperBound * 2 + 1)
    var sessions: [SessionState?] = []
    var freeSessions: [Int32] = []
    var sessionsByID: [String: Int32] = [:]
    @exclusivity(unchecked) var drops = DropCounts()
    /// CE marks this table set, by cause (the worker's total is the sum over its tables).
    @exclusivity(unchecked) var marks = CEMarkCounts()
    @exclusivity(unchecked) var random = MarkingRandom()
    var sessionsCreated: UInt64 = 0
    var sessionsDeleted: UInt64 = 0
    var sessionsExpired: UInt64 = 0
    /// Where the record of each session that ends goes (`SessionTable+Accounting`); nil: none.
    var accounting: AccountingSink?
    /// The kernel fast path (`SessionTable+Offload`); nil: none.
    let offload: (any FlowOffload)?
    /// The pairs the kernel carries, by the index of their group's first leg.
    var offloaded: [Int32: OffloadedPair] = [:]
    /// The pairs among them forwarded on credit.
    var creditedPairs: Set<Int32> = []

    init(engine: Engine, settings: RelaySettings, opener: PortOpener<Engine>, worker: Int, clock: WorkerClock,
         egress: EgressShare = EgressShare(nil)) {
        self.engine = engine
        self.settings = settings
        self.opener = opener
        self.egress = egress
        thresholds = settings.ecnThresholds
        backlog = settings.backlogThresholds
        ownAddresses = OwnAddresses([settings.relayAddress, settings.advertiseAddress] + settings.hostAddresses)
        self.worker = worker
        self.clock = clock
        offload = settings.fastPath
    }

    var count: Int { sessionsByID.count }

    @inline(__always)
    func fromLeg(_ leg: Int, _ datagram: ReceivedDatagram) {
        if legs[leg].latched != datagram.source {
            guard latch(leg, datagram.source) else { return }
            legs[leg].localAddress = datagram.localAddress
            if offload != nil { offloadPair(of: leg) }
        }
        legs[leg].lastHeard = now
        legs[leg].localAddress = datagram.localAddress
        // The policy first: a datagram it sends Not-ECT (`"ecn": "clear"`) is never marked.
        var marking = legs[leg].policy.apply(datagram.trafficClass)
        if legs[leg].limits.isLimited {
            switch legs[leg].limits.police(datagram.bytes.count, marking.ecn, now: now, marks: legs[leg].ecnMarking,
                                           thresholds: thresholds, random: &random) {
            case .pass: break
            case .mark:
                marking = marking.markedCE
                count(leg, .rateLimit)
            case .drop:
                legs[leg].counters.drops.add(.rateLimit)
                drops.add(.rateLimit)
                return
            }
        }
        // After the limits (a datagram they mark is CE, never marked twice), before the egress
        // cap's drop per destination: the wait is the received datagram's, counted once.
        if backlog.marks(marking.ecn, receivedAt: datagram.receivedAt, now: now) && legs[leg].ecnMarking {
            marking = marking.markedCE
            count(leg, .backlog)
        }
        legs[leg].counters.packetsIn &+= 1
        legs[leg].counters.bytesIn &+= UInt64(datagram.bytes.count)
        legs[leg].counters.ecnIn[Int(datagram.trafficClass.ecn.rawValue)] &+= 1
        let first = Int(legs[leg].firstLeg)
        var latched = false
        for other in first..<(first + Int(legs[leg].legCount)) where other != leg {
            guard let peer = legs[other].latched else { continue }
            latched = true
            var out = marking
            if egress.isOn {
                switch egress.police(datagram.bytes.count, out.ecn, now: now, marks: legs[leg].ecnMarking,
                                     thresholds: thresholds, random: &random) {
                case .pass: break
                case .mark: out = out.markedCE; count(leg, .egress)
                case .drop:
                    legs[leg].counters.drops.add(.egress)
                    drops.add(.egress)
                    continue
                }
            }
            engine.enqueue(socket: legs[other].socket, to: peer, from: legs[other].localAddress, trafficClass: out,
                           bytes: datagram.bytes)
            legs[other].counters.packetsOut &+= 1
            legs[other].counters.bytesOut &+= UInt64(datagram.bytes.count)
            legs[other].counters.ecnOut[Int(out.ecn.rawValue)] &+= 1
        }
        if !latched {
            legs[leg].counters.drops.add(.noDestination)
            drops.add(.noDestination)
        }
    }

    @inline(__always)
    private func count(_ leg: Int, _ cause: CEMarkCause) {
        legs[leg].counters.ceMarked.add(cause)
        marks.add(cause)
    }

    /// Latches `leg` onto `source` when allowed: the leg is new, or silent for longer than
    /// relatch_after and the session's relatch policy accepts the source (by default only one
    /// with the latched peer's address: a NAT rebinding, not a stranger after a receive-only
    /// leg's media). Refused: a source outside allowed_sources, a second source while the first
    /// is still talking or that the policy refuses (hijack), and a source already latched on
    /// another leg of the session (which would make the relay send a peer its own datagrams).
    func latch(_ leg: Int, _ source: Endpoint) -> Bool {
        if let latched = legs[leg].latched,
           now &- lastHeard(leg) < legs[leg].relatchAfter || !legs[leg].relatch.allows(from: latched, to: source) {
            return refuse(leg, .hijack)
        }
        if isRelayOwn(source) { return refuse(leg, .sourceNotAllowed) }
        let session = sessions[Int(legs[leg].session)]!
        if !session.request.allowedSources.isEmpty && !session.request.allowedSources.contains(where: { $0.contains(source) }) {
            return refuse(leg, .sourceNotAllowed)
        }
        let first = Int(legs[leg].firstLeg)
        for other in first..<(first + Int(legs[leg].legCount)) where other != leg && legs[other].latched == source {
            return refuse(leg, .hijack)
        }
        if legs[leg].latched != nil { legs[leg].counters.relatches &+= 1 }
        legs[leg].latched = source
        return true
    }

    /// A source that is one of this relay's own sockets (a spoofed datagram naming another
    /// leg's address): latching onto it would make two legs forward to each other forever.
    /// Checked only when a leg latches, never per datagram.
    func isRelayOwn(_ source: Endpoint) -> Bool {
        // Under a wildcard relay address a relayed or session socket sends from the host's
        // interface addresses, so those count as well as the configured ones.
        ownAddresses.contains(source) && settings.ports.isHeld(source.port)
    }

    private func refuse(_ leg: Int, _ reason: DropReason) -> Bool {
        legs[leg].counters.drops.add(reason)
        drops.add(reason)
        return false
    }
}
