import DatagramEngine
import Glibc
import NetAddress
import STUN

/// How the TURN server behaves; fixed for the relay's lifetime and shared by every worker.
public struct TurnSettings: Sendable {
    public var authenticator: TurnAuthenticator
    public var peerPolicy: PeerPolicy
    /// Where relayed sockets bind (port ignored), per family; nil when the relay has no
    /// address of that family (Allocate asking for it gets 440).
    public var relayIPv4: Endpoint?
    public var relayIPv6: Endpoint?
    /// The addresses put in XOR-RELAYED-ADDRESS (port ignored): the public side of a 1:1 NAT.
    public var advertiseIPv4: Endpoint?
    public var advertiseIPv6: Endpoint?
    public var marking = MarkingPolicy()
    /// Seconds (RFC 8656 section 3.7 and 9, 11).
    public var defaultLifetime: UInt32 = 600
    public var maxLifetime: UInt32 = 3600
    public var permissionLifetime: UInt32 = 300
    public var channelLifetime: UInt32 = 600
    /// 0 means no limit.
    public var maxAllocationsPerUser = 0
    public var maxAllocations = 0
    /// Bytes per second relayed per allocation, both directions together; 0 means no limit.
    public var bandwidthPerAllocation: UInt64 = 0
    /// Where in the quota's burst (and the egress cap's) ECT datagrams start being marked CE;
    /// whether they are is in `TurnSharedState.ecnMarking`.
    public var ecnThresholds = ECNThresholds()
    /// The sojourn past which ECT datagrams are marked CE when the worker falls behind (with
    /// the engine's receive timestamps on); whether they are is the allocation's marking setting.
    public var backlogThresholds = BacklogThresholds()
    /// Permissions per allocation: each is a peer the relay talks to for the client.
    public var maxPermissions = 64
    /// The reloadable quotas at start; the workers read the ones in force from `TurnSharedState`.
    public var limits = TurnLimits()
    /// Sibling relays for new clients this one will not take, at start; the workers read the
    /// ones in force from `TurnSharedState` (a reload may change them).
    public var alternates = TurnAlternates()
    /// Bounds on clients over TCP and TLS.
    public var streamLimits = TurnStreamLimits()
    /// Where failed authentications and refusals the operator can cure are told, on the
    /// worker's thread, each past its rate limit (`TurnNotices`).
    public var notices: TurnNoticeSink = { _ in }
    /// Unix seconds, the clock REST usernames expire by (injected by tests).
    public var wallClock: @Sendable () -> UInt64 = { UInt64(time(nil)) }

    public init(authenticator: TurnAuthenticator, peerPolicy: PeerPolicy = PeerPolicy(),
                relayIPv4: Endpoint? = Endpoint(ipv4: 0, port: 0), relayIPv6: Endpoint? = nil) {
        self.authenticator = authenticator
        self.peerPolicy = peerPolicy
        self.relayIPv4 = relayIPv4
        self.relayIPv6 = relayIPv6
        advertiseIPv4 = relayIPv4
        advertiseIPv6 = relayIPv6
    }

    /// A response to an unauthenticated request may exceed the request by this many bytes at
    /// most: a 401 carries REALM, NONCE and PASSWORD-ALGORITHMS, but nobody may use the relay
    /// to multiply traffic towards a forged source address.
    static let unauthenticatedSlack = 128

    /// The lifetime granted for a requested one (RFC 8656 section 7.2): the request capped at
    /// the maximum, but never below the default.
    func lifetime(requested: UInt32?) -> UInt32 {
        max(defaultLifetime, min(requested ?? defaultLifetime, maxLifetime))
    }
}
