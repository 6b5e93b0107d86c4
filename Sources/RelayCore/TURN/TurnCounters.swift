import STUN
import SystemSupport

/// Why a TURN datagram was not relayed (each counted under one reason).
public enum TurnDropReason: Int, Sendable, CaseIterable {
    /// Neither STUN nor ChannelData, or a STUN message that does not parse.
    case malformed
    /// ChannelData or a Send indication from a client with no allocation.
    case noAllocation
    /// ChannelData on a channel that is not bound (or has expired).
    case noChannel
    /// To or from a peer without a permission.
    case noPermission
    /// Past the allocation's bandwidth quota.
    case bandwidth
    /// An answer to an unauthenticated request that would be larger than the request allows.
    case amplification
    /// No room for the framing (a payload too long for a Data indication).
    case tooLarge
    /// A Send indication to a port the peer policy refuses on a permitted address.
    case forbiddenPeer
    /// ChannelData or a Send to the relay's own address at a pool port that is no longer a
    /// relayed address (its allocation ended and the port went back to the pool): the channel
    /// or permission was checked against the allocation that had it then, not whoever binds it now.
    case staleRelayedPeer
    /// A request that could only be refused without authentication (a challenge, 438, 400),
    /// from a source address past its `TurnLimits.unauthenticatedRate`: not answered at all.
    case unauthenticatedRate
    /// Past the relay-wide --egress-rate (the shared bucket was empty).
    case egress
    /// To a client over TCP or TLS whose pending output is past its bound: a client that does
    /// not read its socket loses datagrams, never the worker's time or memory.
    case clientBackpressure

    public var name: String {
        switch self {
        case .malformed: "malformed"
        case .noAllocation: "no_allocation"
        case .noChannel: "no_channel"
        case .noPermission: "no_permission"
        case .bandwidth: "bandwidth"
        case .amplification: "amplification"
        case .tooLarge: "too_large"
        case .forbiddenPeer: "forbidden_peer"
        case .staleRelayedPeer: "stale_relayed_peer"
        case .unauthenticatedRate: "unauthenticated_rate"
        case .egress: "egress"
        case .clientBackpressure: "client_backpressure"
        }
    }
}

/// One worker's TURN counters: plain integers in fixed tables, so counting never allocates.
public struct TurnCounters: Sendable {
    public var allocationsCreated: UInt64 = 0
    public var allocationsDeleted: UInt64 = 0
    public var allocationsExpired: UInt64 = 0
    /// Allocate requests refused, by error code (400..508 as index code - 400).
    public var refused = InlineArray<110, UInt64>(repeating: 0)
    public var authFailures = InlineArray<8, UInt64>(repeating: 0)
    public var drops = InlineArray<12, UInt64>(repeating: 0)
    /// Peers refused by the peer policy (CreatePermission, ChannelBind, Send), by reason: what
    /// an operator reads to see a client probing the relay's own or internal addresses.
    public var peerRefusals = InlineArray<9, UInt64>(repeating: 0)
    public var channelDataToPeers: UInt64 = 0
    public var channelDataToClients: UInt64 = 0
    public var indicationsToPeers: UInt64 = 0
    public var indicationsToClients: UInt64 = 0
    public var bytesToPeers: UInt64 = 0
    public var bytesToClients: UInt64 = 0
    public var bindingRequests: UInt64 = 0
    /// ChannelBind requests for a new channel refused with 508 at `TurnLimits.maxChannels`.
    public var channelsRefused: UInt64 = 0
    /// CE marks set on relayed datagrams, by cause.
    public var ceMarks = CEMarkCounts()
    /// Allocate requests answered 300 with an alternate, by `TurnRedirectReason`.
    public var redirects = InlineArray<3, UInt64>(repeating: 0)

    public init() {}

    public subscript(drop reason: TurnDropReason) -> UInt64 { drops[reason.rawValue] }
    public subscript(auth reason: AuthFailure) -> UInt64 { authFailures[reason.rawValue] }
    public subscript(peer reason: PeerRefusal) -> UInt64 { peerRefusals[reason.index] }
    public subscript(redirect reason: TurnRedirectReason) -> UInt64 { redirects[reason.rawValue] }
    public subscript(refused code: ErrorCode) -> UInt64 {
        (400..<510).contains(code.rawValue) ? refused[code.rawValue - 400] : 0
    }

    @inline(__always)
    mutating func add(_ reason: TurnDropReason) { drops[reason.rawValue] &+= 1 }

    mutating func add(_ reason: AuthFailure) { authFailures[reason.rawValue] &+= 1 }

    mutating func add(_ reason: PeerRefusal) { peerRefusals[reason.index] &+= 1 }

    mutating func refuse(_ code: ErrorCode) {
        if (400..<510).contains(code.rawValue) { refused[code.rawValue - 400] &+= 1 }
    }
}

/// What one worker's TURN table reports: its counters and what is active now.
public struct TurnStats: Sendable {
    public var counters = TurnCounters()
    public var allocations = 0
    public var permissions = 0
    public var channels = 0
    /// Counters by transport (connections, handshakes, relayed datagrams).
    public var transports = TransportCounters()
    /// TCP and TLS connections open now, per transport (udp stays 0).
    public var openConnections = InlineArray<3, Int>(repeating: 0)

    public init() {}

    public mutating func merge(_ other: TurnStats) {
        allocations += other.allocations
        permissions += other.permissions
        channels += other.channels
        transports.merge(other.transports)
        for index in openConnections.indices { openConnections[index] += other.openConnections[index] }
        counters.merge(other.counters)
    }
}

extension TurnCounters {
    /// Adds `other` field by field. Written out, not through key paths: the TURN table sums
    /// its parts' counters for every stats snapshot on the worker's thread, where nothing may
    /// allocate.
    public mutating func merge(_ other: TurnCounters) {
        allocationsCreated &+= other.allocationsCreated
        allocationsDeleted &+= other.allocationsDeleted
        allocationsExpired &+= other.allocationsExpired
        channelDataToPeers &+= other.channelDataToPeers
        channelDataToClients &+= other.channelDataToClients
        indicationsToPeers &+= other.indicationsToPeers
        indicationsToClients &+= other.indicationsToClients
        bytesToPeers &+= other.bytesToPeers
        bytesToClients &+= other.bytesToClients
        bindingRequests &+= other.bindingRequests
        channelsRefused &+= other.channelsRefused
        refused.add(other.refused)
        authFailures.add(other.authFailures)
        drops.add(other.drops)
        peerRefusals.add(other.peerRefusals)
        ceMarks.merge(other.ceMarks)
        redirects.add(other.redirects)
    }
}
