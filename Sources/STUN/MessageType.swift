/// A STUN method (RFC 8489 section 5; the TURN methods of RFC 8656 section 17).
public struct Method: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue & 0x0FFF }

    public static let binding = Method(rawValue: 0x001)
    public static let allocate = Method(rawValue: 0x003)
    public static let refresh = Method(rawValue: 0x004)
    public static let send = Method(rawValue: 0x006)
    public static let data = Method(rawValue: 0x007)
    public static let createPermission = Method(rawValue: 0x008)
    public static let channelBind = Method(rawValue: 0x009)

    public var description: String {
        switch self {
        case .binding: "Binding"
        case .allocate: "Allocate"
        case .refresh: "Refresh"
        case .send: "Send"
        case .data: "Data"
        case .createPermission: "CreatePermission"
        case .channelBind: "ChannelBind"
        default: "method 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// Request, indication, success or error response: the two class bits of the message type.
public enum MessageClass: UInt16, Sendable {
    case request = 0, indication = 1, successResponse = 2, errorResponse = 3
}

/// The 14-bit message type: a method's 12 bits with the class's two bits woven between them
/// (M11..M7 C1 M6..M4 C0 M3..M0), as on the wire.
public struct MessageType: Hashable, Sendable {
    public var method: Method
    public var messageClass: MessageClass

    public init(_ method: Method, _ messageClass: MessageClass) {
        self.method = method
        self.messageClass = messageClass
    }

    public init(wire: UInt16) {
        let m = wire
        method = Method(rawValue: (m & 0x000F) | ((m & 0x00E0) >> 1) | ((m & 0x3E00) >> 2))
        messageClass = MessageClass(rawValue: ((m & 0x0010) >> 4) | ((m & 0x0100) >> 7))!
    }

    public var wire: UInt16 {
        let m = method.rawValue
        let c = messageClass.rawValue
        return (m & 0x000F) | ((m & 0x0070) << 1) | ((m & 0x0F80) << 2) | ((c & 1) << 4) | ((c & 2) << 7)
    }
}
