import NetAddress

/// A STUN message as bytes plus its parsed view. Construction checks every rule of RFC 8489;
/// the accessors then read attribute values, returning nil when absent and throwing
/// `MessageError.badValue` when present but malformed. Control path: it owns a copy.
public struct StunMessage: Sendable {
    public let bytes: [UInt8]
    public let index: AttributeIndex

    public init(bytes: [UInt8]) throws(MessageError) {
        self.bytes = bytes
        let parsed = bytes.withUnsafeBytes { raw in Result { () throws(MessageError) in try AttributeIndex(parsing: raw) } }
        index = try parsed.get()
    }

    public init(copying raw: UnsafeRawBufferPointer) throws(MessageError) {
        try self.init(bytes: Array(raw))
    }

    public var type: MessageType { index.type }
    public var method: Method { index.type.method }
    public var messageClass: MessageClass { index.type.messageClass }
    public var transactionID: TransactionID { index.transactionID }

    public func contains(_ type: AttributeType) -> Bool { index.first(type) != nil }

    /// Runs `decode` over the value of the first attribute of `type`: nil when absent, and
    /// `badValue` when `decode` finds it malformed.
    public func value<T>(_ type: AttributeType, _ decode: (UnsafeRawBufferPointer) -> T?) throws(MessageError) -> T? {
        guard let slot = index.first(type) else { return nil }
        return try value(slot, decode)
    }

    public func value<T>(_ slot: AttributeSlot, _ decode: (UnsafeRawBufferPointer) -> T?) throws(MessageError) -> T {
        let decoded = bytes.withUnsafeBytes { decode(UnsafeRawBufferPointer(rebasing: $0[slot.offset..<(slot.offset + slot.length)])) }
        guard let decoded else { throw .badValue(slot.type) }
        return decoded
    }

    /// A text attribute (USERNAME 513 bytes at most, the others 763).
    public func text(_ type: AttributeType) throws(MessageError) -> String? {
        let maximum = type == .username ? 513 : 763
        return try value(type) { AttributeValue.text($0, maximum: maximum) }
    }

    public func xorAddress(_ type: AttributeType) throws(MessageError) -> Endpoint? {
        let id = transactionID
        return try value(type) { XORAddress.decode($0, id) }
    }

    /// Every XOR-PEER-ADDRESS (CreatePermission may carry several).
    public func xorAddresses(_ type: AttributeType) throws(MessageError) -> [Endpoint] {
        let id = transactionID
        var addresses: [Endpoint] = []
        for position in 0..<index.count where index[position].type == type {
            addresses.append(try value(index[position]) { XORAddress.decode($0, id) })
        }
        return addresses
    }

    /// Comprehension-required attributes of this message that `understood` does not accept.
    public func unknownRequired(_ understood: (AttributeType) -> Bool) -> [AttributeType] {
        (0..<index.count).map { index[$0].type }.filter { $0.isComprehensionRequired && !understood($0) }
    }

    /// What the message's integrity attribute says under `key`: MESSAGE-INTEGRITY-SHA256 when
    /// present (the stronger one), else MESSAGE-INTEGRITY.
    public func integrity(key: [UInt8]) -> IntegrityCheck {
        guard let position = index.integritySHA256 ?? index.integrity else { return .absent }
        return bytes.withUnsafeBytes { MessageIntegrity.verify(index[position], key: key, message: $0) } ? .valid : .invalid
    }

    /// Which integrity attribute the message carries, if any.
    public var integrityType: AttributeType? {
        index.integritySHA256 != nil ? .messageIntegritySHA256 : (index.integrity != nil ? .messageIntegrity : nil)
    }
}

/// The outcome of checking a message's integrity attribute.
public enum IntegrityCheck: Sendable, Equatable { case absent, valid, invalid }
