import CSSL

/// The TLS versions a context may speak: 1.2 is the floor everywhere, 1.3 the default
/// ceiling. A client may be held at 1.2 (tests, interop checks); a server always offers both.
public enum TLSVersion: Sendable, CaseIterable, CustomStringConvertible {
    case tls12
    case tls13

    public var description: String {
        switch self {
        case .tls12: "TLS 1.2"
        case .tls13: "TLS 1.3"
        }
    }

    var openSSLValue: Int32 {
        switch self {
        case .tls12: TLS1_2_VERSION
        case .tls13: TLS1_3_VERSION
        }
    }
}
