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
