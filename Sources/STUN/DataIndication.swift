import NetAddress

/// Writes a Data indication (RFC 8656 section 11.4: XOR-PEER-ADDRESS, then DATA) straight into
/// a caller's buffer: the packet path builds one per datagram from a peer without allocating.
public enum DataIndication {
    /// Bytes a Data indication adds in front of the payload for `peer` (padding not counted).
    public static func overhead(for peer: Endpoint) -> Int {
        AttributeIndex.headerSize + 4 + XORAddress.valueLength(of: peer) + 4
    }

    /// Writes the indication with `payload` at `offset` of `buffer`; returns its size, or 0 when
    /// the buffer has no room (the caller drops the datagram and counts it).
    public static func write(peer: Endpoint, payload: UnsafeRawBufferPointer, id: TransactionID,
                             to buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        let header = overhead(for: peer)
        let padded = (payload.count + 3) & ~3
        let size = header + padded
        guard offset + size <= buffer.count, size - AttributeIndex.headerSize <= Int(UInt16.max) else { return 0 }
        buffer.storeBigEndian(MessageType(.data, .indication).wire, at: offset)
        buffer.storeBigEndian(UInt16(size - AttributeIndex.headerSize), at: offset + 2)
        buffer.storeBigEndian(AttributeIndex.magicCookie, at: offset + 4)
        id.write(to: buffer, at: offset + 8)
        let addressLength = XORAddress.valueLength(of: peer)
        var position = offset + AttributeIndex.headerSize
        buffer.storeBigEndian(AttributeType.xorPeerAddress.rawValue, at: position)
        buffer.storeBigEndian(UInt16(addressLength), at: position + 2)
        XORAddress.write(peer, id, to: buffer, at: position + 4)
        position += 4 + addressLength
        buffer.storeBigEndian(AttributeType.data.rawValue, at: position)
        buffer.storeBigEndian(UInt16(payload.count), at: position + 2)
        position += 4
        if let base = payload.baseAddress, payload.count > 0 {
            (buffer.baseAddress! + position).copyMemory(from: base, byteCount: payload.count)
        }
        for pad in (position + payload.count)..<(offset + size) { buffer[pad] = 0 }
        return size
    }
}
