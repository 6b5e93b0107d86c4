import NetAddress
import STUN
import SystemSupport

/// Something a TURN request met that a person should read: a failed authentication (what
/// fail2ban and an operator debugging a client look for), or a refusal the operator can cure
/// with an option. Built on the request path, never per datagram, and only once its rate limit
/// let it through; the executable writes it as one log line (`TurnSettings.notices`).
public enum TurnNotice: Sendable, Equatable {
    case authenticationFailed(AuthenticationFailureNotice)
    case refused(RefusalNotice)
}

/// Where each worker hands its notices, on its own thread.
public typealias TurnNoticeSink = @Sendable (TurnNotice) -> Void

/// A signed request that did not authenticate, with what the client sent.
public struct AuthenticationFailureNotice: Sendable, Equatable {
    public var client: Endpoint
    public var transport: TurnTransport
    /// USERNAME and REALM as the client sent them; nil when absent or not UTF-8.
    public var username: String?
    public var realm: String?
    public var reason: AuthFailure
    /// Failures from the same source not written since its previous notice.
    public var suppressed: UInt64
}

/// A request (or a TCP or TLS connection) refused for a cause the operator can act on.
public struct RefusalNotice: Sendable, Equatable {
    public var cause: RefusalCause
    /// The error code the request was answered with; nil for a connection closed on accept.
    public var code: ErrorCode?
    public var client: Endpoint
    /// Refusals for the same cause not written since its previous notice.
    public var suppressed: UInt64
}

/// Why a request was refused, where an option (or the host) decides it. Every 508 has one.
public enum RefusalCause: Sendable, Equatable {
    /// --turn-max-allocations reached (508).
    case allocationLimit
    /// --turn-max-allocations-per-user reached for this user (486).
    case userAllocationLimit
    /// No free relayed port: TURN's share of --ports is in use, or every port tried was held
    /// by another process (508).
    case noRelayedPort
    /// Binding a relayed socket failed for another reason than a busy port (508): an address
    /// that left the host, say.
    case relayedBindFailed(SystemCallError)
    /// --turn-max-channels reached on an allocation (508).
    case channelLimit
    /// The permissions an allocation may hold are all in use (508).
    case permissionLimit
    /// A RESERVATION-TOKEN this relay does not hold (never issued, expired or redeemed) (508).
    case unknownReservation
    /// The relay has no relayed address of the family asked for (440).
    case familyNotRelayed(AddressFamily)
    /// The peer policy refused a peer (403).
    case peerRefused(PeerRefusal, Endpoint)
    /// A TCP or TLS connection closed on accept: the relay holds --turn-max-connections.
    case connectionLimit
    /// A TCP or TLS connection closed on accept: its address holds
    /// --turn-max-connections-per-source.
    case sourceConnectionLimit

    /// A small number per kind of cause (reasons and addresses aside), for rate limits.
    var kind: Int {
        switch self {
        case .allocationLimit: 0
        case .userAllocationLimit: 1
        case .noRelayedPort: 2
        case .relayedBindFailed: 3
        case .channelLimit: 4
        case .permissionLimit: 5
        case .unknownReservation: 6
        case .familyNotRelayed: 7
        case .peerRefused: 8
        case .connectionLimit: 9
        case .sourceConnectionLimit: 10
        }
    }

    static let kinds = 11
}
