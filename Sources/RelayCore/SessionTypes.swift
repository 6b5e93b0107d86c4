import DatagramEngine
import NetAddress

/// What a control-API client asks for when it creates a session.
public struct SessionRequest: Sendable {
    /// 2 is a pair; more is a fan-out where every leg hears every other.
    public var legs = 2
    public var policy = MarkingPolicy()
    /// The session ends after this long with no datagram on any leg.
    public var idleTimeoutSeconds = 60
    /// Per leg; 0 means no limit.
    public var maxPacketsPerSecond = 0
    /// Per leg, UDP payload bytes; 0 means no limit. With both limits a datagram passes the
    /// packet limit, then the byte limit (two policers in series).
    public var maxBytesPerSecond = 0
    /// Whether the relay marks this session's ECT datagrams CE at its rate limits and the
    /// egress cap before it drops them (`ECNThresholds`); off: drops only, as before.
    public var ecnMarking = true
    /// A latched leg silent this long may latch onto a new source (NAT rebinding)...
    public var relatchAfterSeconds = 5
    /// ...if this policy allows that source.
    public var relatch = RelatchPolicy.sameAddress
    /// One port per leg (RTCP multiplexed) or an RTP/RTCP port pair per leg.
    public var rtcp = RTCPMode.mux
    /// When not empty, only sources inside these ranges may latch or send.
    public var allowedSources: [AddressRange] = []

    public static let legRange = 2...16

    public init() {}
}

/// Counters of one leg, as the control API reports them.
public struct LegCounters: Sendable {
    public var packetsIn: UInt64 = 0
    public var bytesIn: UInt64 = 0
    /// Datagrams sent out of this leg to its latched peer.
    public var packetsOut: UInt64 = 0
    public var bytesOut: UInt64 = 0
    public var ecnIn = InlineArray<4, UInt64>(repeating: 0)
    public var ecnOut = InlineArray<4, UInt64>(repeating: 0)
    public var drops = DropCounts()
    /// Datagrams received here that the relay marked CE, by cause (CE that arrived is in
    /// `ecnIn`, never here).
    public var ceMarked = CEMarkCounts()
    public var relatches: UInt64 = 0

    public init() {}
}

/// A snapshot of one leg.
public struct LegInfo: Sendable {
    public var address: Endpoint
    public var latched: Endpoint?
    public var counters: LegCounters
    /// The leg's RTCP companion (its port is `address.port + 1`) in an `"rtcp": "pair"` session.
    public var rtcp: RTCPCompanionInfo?
}

/// A snapshot of a leg's RTCP companion socket: it latches and counts on its own.
public struct RTCPCompanionInfo: Sendable {
    public var address: Endpoint
    public var latched: Endpoint?
    public var counters: LegCounters
}

/// A snapshot of one session, taken by its worker.
public struct SessionInfo: Sendable {
    public var id: String
    public var worker: Int
    public var request: SessionRequest
    public var legs: [LegInfo]
    public var ageSeconds: Double
    public var idleSeconds: Double
}

/// Why the relay could not do what the control API asked.
public enum RelayError: Error, Sendable, Equatable, CustomStringConvertible {
    case sessionCapReached(Int)
    case portsExhausted
    case notFound
    case draining
    case workerUnresponsive
    case socket(String)

    public var description: String {
        switch self {
        case .sessionCapReached(let cap): "the relay holds its maximum of \(cap) sessions"
        case .portsExhausted: "no free port left in the relay's port range"
        case .notFound: "no such session"
        case .draining: "the relay is shutting down and takes no new sessions"
        case .workerUnresponsive: "the worker owning this session did not answer in time"
        case .socket(let text): text
        }
    }
}
