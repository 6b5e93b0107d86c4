import STUN
import SystemSupport

/// Why the relay ended a TCP or TLS connection (or the peer did): a stats label each.
public enum ConnectionCloseReason: Int, Sendable, CaseIterable {
    /// The client closed its side (FIN), or sent TLS's close_notify.
    case peerClosed
    /// A reset or another error the kernel reported on the connection.
    case reset
    /// The kernel refused the connection memory (ENOBUFS, ENOMEM).
    case kernelLimit
    /// A TLS handshake that did not finish within 10 seconds.
    case handshakeTimeout
    /// No valid STUN message or ChannelData within 10 seconds of connecting.
    case messageTimeout
    /// No message for a while from a client without an allocation.
    case idleTimeout
    /// Bytes that cannot be STUN or ChannelData, a bad length, a message too large.
    case framing
    /// A TLS record on the plaintext TURN port.
    case tlsOnTCP
    /// Not a TLS handshake on the TLS port (plaintext STUN, HTTP, garbage).
    case notTLS
    /// A TLS handshake the library refused, or a bad record afterwards.
    case tlsError
    /// The connection's allocation ended (expired, or deleted by a Refresh of 0).
    case allocationEnded
    /// Refused on accept: the relay holds --turn-max-connections already.
    case overCapacity
    /// Refused on accept: the source address holds its share of connections already.
    case perSourceLimit
    /// The relay is stopping.
    case shutdown

    public var name: String {
        switch self {
        case .peerClosed: "peer_closed"
        case .reset: "reset"
        case .kernelLimit: "kernel_limit"
        case .handshakeTimeout: "handshake_timeout"
        case .messageTimeout: "message_timeout"
        case .idleTimeout: "idle_timeout"
        case .framing: "framing"
        case .tlsOnTCP: "tls_on_tcp"
        case .notTLS: "not_tls"
        case .tlsError: "tls_error"
        case .allocationEnded: "allocation_ended"
        case .overCapacity: "over_capacity"
        case .perSourceLimit: "per_source_limit"
        case .shutdown: "shutdown"
        }
    }
}

/// Why a TLS handshake failed.
public enum HandshakeFailure: Int, Sendable, CaseIterable {
    /// The first bytes were not a TLS handshake (plaintext on the TLS port).
    case notTLS
    /// The library refused the handshake (no shared version or cipher, a bad record, an alert).
    case protocolError
    /// Not finished within 10 seconds.
    case timeout
    /// The client went away mid-handshake.
    case peerClosed

    public var name: String {
        switch self {
        case .notTLS: "not_tls"
        case .protocolError: "protocol"
        case .timeout: "timeout"
        case .peerClosed: "peer_closed"
        }
    }
}

/// One worker's counters of TURN by transport: connections (TCP and TLS), TLS handshakes, and
/// what every transport relayed. Fixed tables of plain integers: counting never allocates.
public struct TransportCounters: Sendable {
    /// Connections accepted and kept, per transport (udp stays 0).
    public var opened = InlineArray<3, UInt64>(repeating: 0)
    /// Connections closed, per transport and reason: `transport * reasons + reason`.
    public var closed = InlineArray<42, UInt64>(repeating: 0)
    public var handshakesCompleted: UInt64 = 0
    public var handshakesFailed = InlineArray<4, UInt64>(repeating: 0)
    /// Datagrams relayed, per transport of the allocation's client: to peers and to clients.
    public var datagramsToPeers = InlineArray<3, UInt64>(repeating: 0)
    public var datagramsToClients = InlineArray<3, UInt64>(repeating: 0)
    public var bytesToPeers = InlineArray<3, UInt64>(repeating: 0)
    public var bytesToClients = InlineArray<3, UInt64>(repeating: 0)
    /// Allocations made, per transport.
    public var allocations = InlineArray<3, UInt64>(repeating: 0)

    public init() {}

    public subscript(closed transport: TurnTransport, reason reason: ConnectionCloseReason) -> UInt64 {
        closed[transport.rawValue * ConnectionCloseReason.allCases.count + reason.rawValue]
    }

    mutating func close(_ transport: TurnTransport, _ reason: ConnectionCloseReason) {
        closed[transport.rawValue * ConnectionCloseReason.allCases.count + reason.rawValue] &+= 1
    }

    public mutating func merge(_ other: TransportCounters) {
        opened.add(other.opened)
        closed.add(other.closed)
        handshakesCompleted &+= other.handshakesCompleted
        handshakesFailed.add(other.handshakesFailed)
        datagramsToPeers.add(other.datagramsToPeers)
        datagramsToClients.add(other.datagramsToClients)
        bytesToPeers.add(other.bytesToPeers)
        bytesToClients.add(other.bytesToClients)
        allocations.add(other.allocations)
    }
}
