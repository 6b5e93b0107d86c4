/// Why bytes are not a well-formed STUN message (or an attribute value is malformed). A
/// server answers a malformed request with 400 where it can read a transaction id, and
/// otherwise drops it silently.
public enum MessageError: Error, Equatable, Sendable, CustomStringConvertible {
    case shorterThanHeader(Int)
    /// The two leading bits are not zero: ChannelData or something else.
    case notSTUN
    case badMagicCookie(UInt32)
    case lengthNotMultipleOfFour(Int)
    /// The header's length disagrees with the datagram's.
    case lengthMismatch(header: Int, datagram: Int)
    case attributeOverrun(AttributeType)
    case tooManyAttributes
    case fingerprintNotLast
    case badFingerprint
    /// A known attribute whose value has the wrong size or content.
    case badValue(AttributeType)

    public var description: String {
        switch self {
        case .shorterThanHeader(let count): "\(count) bytes, shorter than a STUN header (20)"
        case .notSTUN: "leading bits are not 00: not a STUN message"
        case .badMagicCookie(let value): "magic cookie 0x\(String(value, radix: 16)), not 0x2112a442"
        case .lengthNotMultipleOfFour(let length): "message length \(length) is not a multiple of 4"
        case .lengthMismatch(let header, let datagram):
            "header says \(header) bytes of attributes, the datagram has \(datagram)"
        case .attributeOverrun(let type): "attribute \(type) runs past the end of the message"
        case .tooManyAttributes: "more than \(AttributeIndex.capacity) attributes"
        case .fingerprintNotLast: "FINGERPRINT is not the last attribute"
        case .badFingerprint: "FINGERPRINT does not match the message"
        case .badValue(let type): "attribute \(type) has a malformed value"
        }
    }
}
