/// The ECN codepoint: the low two bits of the TOS / Traffic Class byte (RFC 3168).
public enum ECN: UInt8, Sendable, CaseIterable {
    case notECT = 0
    case ect1 = 1
    case ect0 = 2
    case ce = 3

    /// Names used in stats and metrics labels.
    public var name: String {
        switch self {
        case .notECT: "not_ect"
        case .ect0: "ect0"
        case .ect1: "ect1"
        case .ce: "ce"
        }
    }
}

/// The TOS / Traffic Class byte of one datagram: `(dscp << 2) | ecn`. Carried per datagram
/// both ways; unlike an ECN-only field it keeps the DSCP too.
public struct TrafficClass: Hashable, Sendable {
    public var rawValue: UInt8

    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }

    @inlinable public init(dscp: UInt8, ecn: ECN) { rawValue = (dscp << 2) | ecn.rawValue }

    @inlinable public var dscp: UInt8 { rawValue >> 2 }
    @inlinable public var ecn: ECN { ECN(rawValue: rawValue & 3)! }
}
