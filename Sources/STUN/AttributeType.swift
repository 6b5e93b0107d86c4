/// A STUN attribute type (RFC 8489 section 18.3, RFC 8656 section 18). Types below 0x8000
/// are comprehension-required: a request carrying one the server does not know gets 420.
public struct AttributeType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public var isComprehensionRequired: Bool { rawValue < 0x8000 }

    // RFC 8489
    public static let mappedAddress = AttributeType(rawValue: 0x0001)
    public static let username = AttributeType(rawValue: 0x0006)
    public static let messageIntegrity = AttributeType(rawValue: 0x0008)
    public static let errorCode = AttributeType(rawValue: 0x0009)
    public static let unknownAttributes = AttributeType(rawValue: 0x000A)
    public static let realm = AttributeType(rawValue: 0x0014)
    public static let nonce = AttributeType(rawValue: 0x0015)
    public static let messageIntegritySHA256 = AttributeType(rawValue: 0x001C)
    public static let passwordAlgorithm = AttributeType(rawValue: 0x001D)
    public static let userhash = AttributeType(rawValue: 0x001E)
    public static let xorMappedAddress = AttributeType(rawValue: 0x0020)
    public static let passwordAlgorithms = AttributeType(rawValue: 0x8002)
    public static let alternateDomain = AttributeType(rawValue: 0x8003)
    public static let software = AttributeType(rawValue: 0x8022)
    public static let alternateServer = AttributeType(rawValue: 0x8023)
    public static let fingerprint = AttributeType(rawValue: 0x8028)
    // RFC 8656 (TURN)
    public static let channelNumber = AttributeType(rawValue: 0x000C)
    public static let lifetime = AttributeType(rawValue: 0x000D)
    public static let xorPeerAddress = AttributeType(rawValue: 0x0012)
    public static let data = AttributeType(rawValue: 0x0013)
    public static let xorRelayedAddress = AttributeType(rawValue: 0x0016)
    public static let requestedAddressFamily = AttributeType(rawValue: 0x0017)
    public static let evenPort = AttributeType(rawValue: 0x0018)
    public static let requestedTransport = AttributeType(rawValue: 0x0019)
    public static let dontFragment = AttributeType(rawValue: 0x001A)
    public static let reservationToken = AttributeType(rawValue: 0x0022)
    public static let additionalAddressFamily = AttributeType(rawValue: 0x8000)
    public static let addressErrorCode = AttributeType(rawValue: 0x8001)
    public static let icmp = AttributeType(rawValue: 0x8004)
    /// The numbers coturn (4.6) still uses for ADDITIONAL-ADDRESS-FAMILY and ADDRESS-ERROR-CODE,
    /// from the draft before RFC 8656: a server that wants coturn's clients accepts both.
    public static let additionalAddressFamilyDraft = AttributeType(rawValue: 0x8032)
    public static let addressErrorCodeDraft = AttributeType(rawValue: 0x8033)
    // RFC 8445 (ICE): a TURN server sees them only on Binding requests, where they are ignored.
    public static let priority = AttributeType(rawValue: 0x0024)
    public static let useCandidate = AttributeType(rawValue: 0x0025)

    /// Attributes that may appear more than once in one message: CreatePermission carries one
    /// XOR-PEER-ADDRESS per peer, a dual-stack Allocate answer one XOR-RELAYED-ADDRESS per
    /// family. Of any other type only the first occurrence is processed and later ones are
    /// ignored (RFC 8489 section 14).
    public var mayRepeat: Bool { self == .xorPeerAddress || self == .xorRelayedAddress }

    public var description: String { "0x" + String(rawValue, radix: 16) }
}
