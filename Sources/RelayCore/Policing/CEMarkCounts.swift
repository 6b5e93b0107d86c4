import SystemSupport

/// Why the relay set CE on a datagram that arrived ECT. Counted apart from CE that arrived.
public enum CEMarkCause: Int, Sendable, CaseIterable {
    /// A session leg's max_packets_per_second / max_bytes_per_second, or a TURN allocation's
    /// bandwidth quota, past its threshold.
    case rateLimit
    /// The relay-wide --egress-rate past its threshold.
    case egress
    /// The worker's own backlog: a datagram's sojourn in its socket queue, from the kernel's
    /// receive timestamp, past `BacklogThresholds` (0 while receive timestamps are off).
    case backlog

    public var name: String {
        switch self {
        case .rateLimit: "rate_limit"
        case .egress: "egress"
        case .backlog: "backlog"
        }
    }
}

/// CE marks set by the relay, by cause, in a fixed table: counting never allocates.
public struct CEMarkCounts: Sendable, Equatable {
    var counts = InlineArray<3, UInt64>(repeating: 0)

    public init() {}

    @inline(__always)
    mutating func add(_ cause: CEMarkCause) { counts[cause.rawValue] &+= 1 }

    public subscript(cause: CEMarkCause) -> UInt64 {
        get { counts[cause.rawValue] }
        set { counts[cause.rawValue] = newValue }
    }

    public var total: UInt64 { counts[0] &+ counts[1] &+ counts[2] }

    public mutating func merge(_ other: CEMarkCounts) { counts.add(other.counts) }

    public static func == (lhs: CEMarkCounts, rhs: CEMarkCounts) -> Bool {
        CEMarkCause.allCases.allSatisfy { lhs[$0] == rhs[$0] }
    }
}
