import SystemSupport

/// Why a datagram was not forwarded. Every drop is counted under exactly one reason.
public enum DropReason: Int, Sendable, CaseIterable {
    /// From a peer no rule or session knows (e.g. not the upstream of a forward client).
    case unknownSource
    /// From a source other than the one a session leg latched onto.
    case hijack
    /// Beyond a leg's max_packets_per_second or max_bytes_per_second.
    case rateLimit
    /// From a source outside the session's allowed_sources.
    case sourceNotAllowed
    /// Longer than the receive buffer (counted by the engine).
    case truncated
    /// Dropped by the kernel on a full socket receive queue (counted by the engine).
    case kernelOverflow
    /// A new forward-rule client beyond the rule's client cap.
    case clientCap
    /// The kernel refused the send (counted by the engine, by errno).
    case sendError
    /// The other legs of the session have not latched yet: nowhere to send.
    case noDestination
    /// A new forward-rule client found no free port (clients may hold half the range).
    case noPort
    /// Beyond the relay-wide --egress-rate (the shared bucket was empty).
    case egress

    public var name: String {
        switch self {
        case .unknownSource: "unknown_source"
        case .hijack: "hijack"
        case .rateLimit: "rate_limit"
        case .sourceNotAllowed: "source_not_allowed"
        case .truncated: "truncated"
        case .kernelOverflow: "kernel_overflow"
        case .clientCap: "client_cap"
        case .sendError: "send_error"
        case .noDestination: "no_destination"
        case .noPort: "no_port"
        case .egress: "egress"
        }
    }
}

/// Drop counts by reason in a fixed table: counting never allocates.
public struct DropCounts: Sendable {
    var counts = InlineArray<11, UInt64>(repeating: 0)

    public init() {}

    @inline(__always)
    mutating func add(_ reason: DropReason, _ count: UInt64 = 1) { counts[reason.rawValue] &+= count }

    public subscript(reason: DropReason) -> UInt64 {
        get { counts[reason.rawValue] }
        set { counts[reason.rawValue] = newValue }
    }

    public mutating func merge(_ other: DropCounts) {
        counts.add(other.counts)
    }
}

extension DropCounts {
    /// The reasons that counted something, by their stats names, in `DropReason` order.
    var nonZero: [(reason: String, count: UInt64)] {
        DropReason.allCases.compactMap { self[$0] > 0 ? (reason: $0.name, count: self[$0]) : nil }
    }
}
