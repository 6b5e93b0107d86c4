import DatagramEngine
import NetAddress
import STUN
import Synchronization
import TLS

/// The mutable TURN state every worker shares (a `Relay` owns one), locked only on the control
/// path (Allocate, expiry): allocations per user and in total (quotas), and the ports reserved
/// by EVEN-PORT's R bit, whose RESERVATION-TOKEN may come back on another worker (another
/// client 5-tuple). The reloadable quotas are atomics, read without a lock by requests. The
/// alternates (reloadable too) and their rotation are read only when an Allocate is redirected.
public final class TurnSharedState: Sendable {
    private struct State {
        var total = 0
        var perUser: [String: Int] = [:]
        var reservations: [UInt64: (port: UInt16, family: AddressFamily, held: HeldPort, expires: UInt64)] = [:]
    }
    private let state = Mutex(State())
    /// TURN's relayed ports, for the peer policy's question "is this another allocation?".
    public let relayedPorts = RelayedPorts()
    private let maxChannelsNow: Atomic<Int>
    private let unauthenticatedRateNow: Atomic<Int>
    private let ecnMarkingNow = Atomic<Bool>(true)
    /// The alternates in force, and the next one of each list (transport and family) to name:
    /// one rotation for the whole relay, so the workers together spread clients evenly.
    private let alternates: Mutex<(list: TurnAlternates, next: [Int])>
    private let drainingNow = Atomic<Bool>(false)
    /// TCP and TLS connections open, in total and per source (`sourceKey`): counted on
    /// accept and close, never per message.
    private let connectionCounts = Mutex((total: 0, bySource: [Endpoint: Int]()))
    /// The certificate and key new TLS connections get; replaced whole by a reload (SIGHUP),
    /// while open connections keep the context they started with.
    private let tlsContextNow = Mutex<TLSServerContext?>(nil)
    /// The Allocates every worker accepted, for refusing their replays from other 5-tuples,
    /// which usually reach another worker.
    private let acceptedAllocates: Mutex<AcceptedAllocates>

    /// Allocates remembered against replay (`AcceptedAllocates`): enough for the busiest relay's
    /// new allocations over a nonce's lifetime, past which nonces age faster for Allocate only.
    public static let acceptedAllocatesCapacity = 32_768

    public init(limits: TurnLimits = TurnLimits(), acceptedAllocates: Int = TurnSharedState.acceptedAllocatesCapacity) {
        self.acceptedAllocates = Mutex(AcceptedAllocates(capacity: acceptedAllocates))
        maxChannelsNow = Atomic(limits.maxChannels)
        unauthenticatedRateNow = Atomic(limits.unauthenticatedRate)
        alternates = Mutex((TurnAlternates(), [0, 0, 0, 0]))
    }

    /// The quotas in force: those the relay started with until `update` changes them.
    public var limits: TurnLimits {
        TurnLimits(maxChannels: maxChannels, unauthenticatedRate: unauthenticatedRate)
    }
    var maxChannels: Int { maxChannelsNow.load(ordering: .relaxed) }
    var unauthenticatedRate: Int { unauthenticatedRateNow.load(ordering: .relaxed) }

    /// New quotas (a config reload): channels already bound stay, even beyond a lowered cap.
    public func update(_ limits: TurnLimits) {
        maxChannelsNow.store(limits.maxChannels, ordering: .relaxed)
        unauthenticatedRateNow.store(limits.unauthenticatedRate, ordering: .relaxed)
    }

    /// Whether new allocations mark ECT datagrams CE at their quota and the egress cap
    /// (--ecn-marking, reloadable: each allocation keeps what it was made with).
    public var ecnMarking: Bool { ecnMarkingNow.load(ordering: .relaxed) }

    public func setECNMarking(_ on: Bool) { ecnMarkingNow.store(on, ordering: .relaxed) }
    /// New alternates (at start and on a config reload); the rotation goes on where it was.
    public func update(_ alternates: TurnAlternates) {
        self.alternates.withLock { $0.list = alternates }
    }

    /// The next alternate for a client of `transport` and family, in turn; nil when none fits.
    func alternate(for transport: TurnAlternates.Transport, ipv4: Bool) -> TurnRedirect? {
        alternates.withLock { state in
            let candidates = state.list.candidates(transport, ipv4: ipv4)
            guard !candidates.isEmpty else { return nil }
            let slot = (transport == .plain ? 0 : 2) + (ipv4 ? 0 : 1)
            let chosen = candidates[state.next[slot] % candidates.count]
            state.next[slot] = (state.next[slot] + 1) % candidates.count
            return TurnRedirect(server: chosen, domain: transport == .tls ? state.list.domain : nil)
        }
    }

    /// From now on new allocations go to an alternate when there is one (`Relay.beginDrain`).
    public func beginDrain() { drainingNow.store(true, ordering: .releasing) }
    var isDraining: Bool { drainingNow.load(ordering: .acquiring) }

    /// Counts a new allocation for `user` unless a quota says no: 486 per user, 508 in total.
    func admit(_ user: String, perUser: Int, total: Int) -> ErrorCode? {
        state.withLock { state in
            if total > 0 && state.total >= total { return .insufficientCapacity }
            if perUser > 0 && state.perUser[user, default: 0] >= perUser { return .allocationQuotaReached }
            state.total += 1
            state.perUser[user, default: 0] += 1
            return nil
        }
    }

    func release(_ user: String) {
        state.withLock { state in
            state.total -= 1
            let left = state.perUser[user, default: 1] - 1
            state.perUser[user] = left > 0 ? left : nil
        }
    }

    public var allocations: Int { state.withLock { $0.total } }

    /// Counts a new connection from `source` unless a limit says no.
    func admitConnection(from source: Endpoint, limits: TurnStreamLimits) -> ConnectionCloseReason? {
        let key = Self.sourceKey(source)
        return connectionCounts.withLock { counts in
            if counts.total >= limits.maxConnections { return .overCapacity }
            if counts.bySource[key, default: 0] >= limits.maxPerSource { return .perSourceLimit }
            counts.total += 1
            counts.bySource[key, default: 0] += 1
            return nil
        }
    }

    func releaseConnection(from source: Endpoint) {
        let key = Self.sourceKey(source)
        connectionCounts.withLock { counts in
            counts.total -= 1
            let left = counts.bySource[key, default: 1] - 1
            counts.bySource[key] = left > 0 ? left : nil
        }
    }

    /// What connections from `source` count under for `maxPerSource`: an IPv4 address, or an
    /// IPv6 address's /64, since one site holds a whole /64 and could otherwise open each
    /// connection from a fresh address (the answer budget groups sources the same way).
    static func sourceKey(_ source: Endpoint) -> Endpoint {
        Endpoint(high: source.high, low: source.isIPv4 ? source.low : 0, port: 0, scope: source.scope)
    }

    /// TCP and TLS connections open now, on every worker.
    public var connections: Int { connectionCounts.withLock { $0.total } }

    /// The TLS context for new connections; nil until one is set.
    public var tlsContext: TLSServerContext? {
        get { tlsContextNow.withLock { $0 } }
        set { tlsContextNow.withLock { $0 = newValue } }
    }

    /// Whether an authenticated Allocate is new, a late retransmission from its own 5-tuple,
    /// or a replay (`AcceptedAllocates`).
    func admitAllocate(_ request: AcceptedAllocates.Request, from sender: AcceptedAllocates.Sender, nonceIssued: UInt32,
                       second: UInt64, nonces: NonceIssuer) -> AcceptedAllocates.Verdict {
        acceptedAllocates.withLock { $0.admit(request, from: sender, nonceIssued: nonceIssued, second: second, nonces: nonces) }
    }

    /// Keeps `held` (a socket bound on the reserved port, so no other process can take the
    /// port before the token comes back) until the token is redeemed or expires.
    func reserve(_ port: UInt16, family: AddressFamily, held: HeldPort, token: UInt64, until expires: UInt64) {
        state.withLock { $0.reservations[token] = (port, family, held, expires) }
    }

    /// The port a token reserved, its family (the allocation that redeems it gets the same
    /// family as the one that reserved it) and the socket holding it, taken out of the table:
    /// a token is used once.
    func redeem(_ token: UInt64) -> (port: UInt16, family: AddressFamily, held: HeldPort)? {
        state.withLock { $0.reservations.removeValue(forKey: token).map { ($0.port, $0.family, $0.held) } }
    }

    /// Reservations past their time, removed (their sockets close); the caller returns their
    /// ports to the pool.
    func expireReservations(now: UInt64) -> [UInt16] {
        state.withLock { state in
            let expired = state.reservations.filter { $0.value.expires <= now }
            for token in expired.keys { state.reservations[token] = nil }
            return expired.values.map(\.port)
        }
    }
}

/// A socket bound on a port reserved by EVEN-PORT's R bit, not yet registered with any engine.
/// The token may come back on another worker, so the socket crosses threads, but only through
/// TurnSharedState's lock and only once: one thread uses it at a time.
final class HeldPort: @unchecked Sendable {
    let socket: UDPSocket

    init(_ socket: UDPSocket) { self.socket = socket }
}
