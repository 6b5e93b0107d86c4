import NetAddress

/// Builds a STUN message attribute by attribute, keeping the header's length right after
/// each append. Control path: the bytes live in an array. Integrity and fingerprint go last,
/// in that order, as RFC 8489 requires.
public struct MessageBuilder {
    public private(set) var bytes: [UInt8]
    public let transactionID: TransactionID

    public init(_ type: MessageType, transactionID: TransactionID) {
        self.transactionID = transactionID
        bytes = [UInt8](repeating: 0, count: AttributeIndex.headerSize)
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBigEndian(type.wire, at: 0)
            raw.storeBigEndian(AttributeIndex.magicCookie, at: 4)
            transactionID.write(to: raw, at: 8)
        }
    }

    /// Appends one attribute; its value is zero-padded to a multiple of 4.
    public mutating func append(_ type: AttributeType, _ value: [UInt8]) {
        appendHeader(type, length: value.count)
        bytes += value
        pad()
    }

    public mutating func append(_ type: AttributeType, text: String) { append(type, Array(text.utf8)) }

    public mutating func append(_ type: AttributeType, uint32 value: UInt32) {
        append(type, [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16),
                      UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)])
    }

    public mutating func append(_ type: AttributeType, xorAddress endpoint: Endpoint) {
        let length = XORAddress.valueLength(of: endpoint)
        appendHeader(type, length: length)
        let offset = bytes.count
        bytes += [UInt8](repeating: 0, count: length)
        let id = transactionID
        bytes.withUnsafeMutableBytes { XORAddress.write(endpoint, id, to: $0, at: offset) }
        updateLength()
    }

    /// ERROR-CODE with `reason`, or the code's standard reason phrase. RFC 8489 allows 127
    /// characters at most; a longer reason is a bug (the server's reasons are constants).
    public mutating func append(error code: ErrorCode, reason: String? = nil) {
        let phrase = reason ?? code.reason
        precondition(phrase.count <= 127, "an ERROR-CODE reason phrase is 127 characters at most")
        append(.errorCode, [0, 0, UInt8(code.rawValue / 100), UInt8(code.rawValue % 100)] + Array(phrase.utf8))
    }

    /// MESSAGE-INTEGRITY (HMAC-SHA1) or MESSAGE-INTEGRITY-SHA256 under `key`.
    public mutating func appendIntegrity(_ type: AttributeType = .messageIntegrity, key: [UInt8]) {
        let offset = bytes.count
        let length = type == .messageIntegrity ? 20 : 32
        let mac = bytes.withUnsafeBytes {
            MessageIntegrity.mac(type, key: key, message: $0, attributeOffset: offset, length: length)
        }
        append(type, mac)
    }

    public mutating func appendFingerprint() {
        setLength(bytes.count + 8 - AttributeIndex.headerSize)
        let value = bytes.withUnsafeBytes { Fingerprint.value(of: $0) }
        appendHeader(.fingerprint, length: 4)
        bytes += [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16),
                  UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    /// The finished message, parsed (a builder's output always parses).
    public var message: StunMessage { try! StunMessage(bytes: bytes) }

    private mutating func appendHeader(_ type: AttributeType, length: Int) {
        bytes += [UInt8(type.rawValue >> 8), UInt8(truncatingIfNeeded: type.rawValue),
                  UInt8(length >> 8), UInt8(truncatingIfNeeded: length)]
    }

    private mutating func pad() {
        while bytes.count % 4 != 0 { bytes.append(0) }
        updateLength()
    }

    private mutating func updateLength() { setLength(bytes.count - AttributeIndex.headerSize) }

    private mutating func setLength(_ length: Int) {
        bytes[2] = UInt8(length >> 8)
        bytes[3] = UInt8(truncatingIfNeeded: length)
    }
}
