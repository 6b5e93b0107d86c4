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

    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public init(dscp: UInt8, ecn: ECN) { rawValue = (dscp << 2) | ecn.rawValue }

    public var dscp: UInt8 { rawValue >> 2 }
    public var ecn: ECN { ECN(rawValue: rawValue & 3)! }
}

/// Service classes and the DSCP each is marked with (RFC 4594, RFC 8837; Apple's
/// Network.framework names). The relay re-marks to these under the `class` DSCP policy.
public enum ServiceClass: String, Sendable, CaseIterable {
    /// LE (1): bulk transfers and sync that should yield to everything else.
    case background
    /// DF (0): the default.
    case bestEffort
    /// AF21 (18): interactive data such as game state.
    case responsiveData
    /// AF31 (26): non-interactive (buffered) video.
    case streamingVideo
    /// AF41 (34): conferencing video.
    case interactiveVideo
    /// EF (46): voice.
    case interactiveVoice
    /// CS5 (40): control traffic.
    case signaling

    public var dscp: UInt8 {
        switch self {
        case .background: 1
        case .bestEffort: 0
        case .responsiveData: 18
        case .streamingVideo: 26
        case .interactiveVideo: 34
        case .interactiveVoice: 46
        case .signaling: 40
        }
    }
}
