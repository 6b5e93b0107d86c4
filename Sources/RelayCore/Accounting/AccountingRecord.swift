import Glibc
import NetAddress
import STUN
import SystemSupport

/// Why an allocation, a session or a forward-rule client ended: the `reason` of its
/// accounting record.
public enum EndReason: Int, Sendable, CaseIterable {
    /// Ended by its owner: a TURN Refresh with lifetime 0, or DELETE /v1/sessions/ID.
    case deleted
    /// A TURN allocation past its lifetime.
    case expired
    /// A session or forward-rule client silent past its idle timeout.
    case idle
    /// The TCP or TLS connection of a TURN allocation closed (by the client, or by the relay).
    case connectionClosed
    /// Still alive when the relay stopped (after its drain).
    case shutdown

    public var name: String {
        switch self {
        case .deleted: "deleted"
        case .expired: "expired"
        case .idle: "idle"
        case .connectionClosed: "connection_closed"
        case .shutdown: "shutdown"
        }
    }
}

/// What an accounting record describes.
public enum AccountingKind: Int, Sendable, CaseIterable {
    case allocation, session, forwardClient

    public var name: String {
        switch self {
        case .allocation: "allocation"
        case .session: "session"
        case .forwardClient: "forward_client"
        }
    }

    /// The key that names the entry: the TURN user, the session id, the rule's listen address.
    public var idKey: String {
        switch self {
        case .allocation: "user"
        case .session: "session"
        case .forwardClient: "rule"
        }
    }
}

/// One side of an ended entry: an address the relay exchanged datagrams with, and what went in
/// (received from it and relayed) and out (sent to it). ECN counts are by codepoint value:
/// Not-ECT, ECT(1), ECT(0), CE; `in` as they arrived, `out` as the relay sent them.
public struct AccountingSide: Sendable, Equatable {
    /// `client`, `peers`, `upstream`, `leg0`, `rtcp0`...
    public var name: String
    /// The far end (the client, the upstream, a leg's latched peer); nil when there is none or
    /// many (a TURN allocation's peers).
    public var remote: Endpoint?
    /// The relay's own addresses on this side (relayed addresses, a leg's address).
    public var local: [Endpoint]
    public var packetsIn: UInt64 = 0
    public var bytesIn: UInt64 = 0
    public var ecnIn = [UInt64](repeating: 0, count: 4)
    public var packetsOut: UInt64 = 0
    public var bytesOut: UInt64 = 0
    public var ecnOut = [UInt64](repeating: 0, count: 4)

    public init(name: String, remote: Endpoint?, local: [Endpoint]) {
        self.name = name
        self.remote = remote
        self.local = local
    }

    /// A side with what came in from it and what went out to it.
    init(name: String, remote: Endpoint?, local: [Endpoint], in received: (packets: UInt64, bytes: UInt64, ecn: [UInt64]),
         out sent: (packets: UInt64, bytes: UInt64, ecn: [UInt64])) {
        self.init(name: name, remote: remote, local: local)
        (packetsIn, bytesIn, ecnIn) = received
        (packetsOut, bytesOut, ecnOut) = sent
    }

    /// ECN counts of a fixed table, by codepoint value.
    static func codepoints(_ counts: InlineArray<4, UInt64>) -> [UInt64] {
        (0..<4).map { counts[$0] }
    }
}

/// The accounting record of one allocation, session or forward-rule client, built by its worker
/// when the entry ends (never on the packet path) from the plain counters the entry kept.
///
/// Contract: `startNanoseconds` is wall-clock time (CLOCK_REALTIME, nanoseconds since the Unix
/// epoch) of the entry's creation; `durationNanoseconds` its life on the monotonic clock; drops
/// list only the reasons that counted something, by their stats names.
public struct AccountingRecord: Sendable, Equatable {
    public var kind: AccountingKind
    /// The TURN user name, the session id or the forward rule's listen address (as text).
    public var id: String
    /// `udp`, `tcp` or `tls`: how the client reaches the relay.
    public var transport: TurnTransport
    public var startNanoseconds: UInt64
    public var durationNanoseconds: UInt64
    public var sides: [AccountingSide]
    /// Datagrams the relay marked CE itself (CE that arrived is in the sides' `ecnIn`).
    public var ceMarked: UInt64
    public var drops: [(reason: String, count: UInt64)]
    public var reason: EndReason

    public init(kind: AccountingKind, id: String, transport: TurnTransport, startNanoseconds: UInt64,
                durationNanoseconds: UInt64, sides: [AccountingSide], ceMarked: UInt64,
                drops: [(reason: String, count: UInt64)], reason: EndReason) {
        self.kind = kind
        self.id = id
        self.transport = transport
        self.startNanoseconds = startNanoseconds
        self.durationNanoseconds = durationNanoseconds
        self.sides = sides
        self.ceMarked = ceMarked
        self.drops = drops
        self.reason = reason
    }

    public static func == (lhs: AccountingRecord, rhs: AccountingRecord) -> Bool {
        lhs.kind == rhs.kind && lhs.id == rhs.id && lhs.transport == rhs.transport
            && lhs.startNanoseconds == rhs.startNanoseconds && lhs.durationNanoseconds == rhs.durationNanoseconds
            && lhs.sides == rhs.sides && lhs.ceMarked == rhs.ceMarked && lhs.reason == rhs.reason
            && lhs.drops.map(\.reason) == rhs.drops.map(\.reason) && lhs.drops.map(\.count) == rhs.drops.map(\.count)
    }

    /// The start and duration of an entry created at `created` that ends at `now` (both on the
    /// monotonic clock), the start put on the wall clock by one offset read now.
    static func span(created: UInt64, now: UInt64) -> (start: UInt64, duration: UInt64) {
        (created &+ MonotonicClock.realtimeOffset(), now > created ? now - created : 0)
    }
}

/// Where a worker hands the records of entries that end. Called on the worker's thread when an
/// entry ends (a control-path moment, never per datagram); the receiver must not block for
/// long (the relay's formats the line there and writes it with one write(2)).
public typealias AccountingSink = @Sendable (AccountingRecord) -> Void
