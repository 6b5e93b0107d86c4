/// The error codes a STUN/TURN server answers with (RFC 8489 section 14.8, RFC 8656 section 19),
/// each with its reason phrase.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let tryAlternate = ErrorCode(rawValue: 300)
    public static let badRequest = ErrorCode(rawValue: 400)
    public static let unauthenticated = ErrorCode(rawValue: 401)
    public static let forbidden = ErrorCode(rawValue: 403)
    public static let unknownAttribute = ErrorCode(rawValue: 420)
    public static let allocationMismatch = ErrorCode(rawValue: 437)
    public static let staleNonce = ErrorCode(rawValue: 438)
    public static let addressFamilyNotSupported = ErrorCode(rawValue: 440)
    public static let wrongCredentials = ErrorCode(rawValue: 441)
    public static let unsupportedTransportProtocol = ErrorCode(rawValue: 442)
    public static let peerAddressFamilyMismatch = ErrorCode(rawValue: 443)
    public static let allocationQuotaReached = ErrorCode(rawValue: 486)
    public static let serverError = ErrorCode(rawValue: 500)
    public static let insufficientCapacity = ErrorCode(rawValue: 508)

    public var reason: String {
        switch rawValue {
        case 300: "Try Alternate"
        case 400: "Bad Request"
        case 401: "Unauthenticated"
        case 403: "Forbidden"
        case 420: "Unknown Attribute"
        case 437: "Allocation Mismatch"
        case 438: "Stale Nonce"
        case 440: "Address Family not Supported"
        case 441: "Wrong Credentials"
        case 442: "Unsupported Transport Protocol"
        case 443: "Peer Address Family Mismatch"
        case 486: "Allocation Quota Reached"
        case 500: "Server Error"
        case 508: "Insufficient Capacity"
        default: "Error"
        }
    }

    public var description: String { "\(rawValue) \(reason)" }
}
