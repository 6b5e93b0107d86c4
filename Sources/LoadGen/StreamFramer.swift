import STUN

/// One message cut out of a TURN byte stream (RFC 8656 section 12.5): a STUN message whole, or
/// the data of a ChannelData message without its header and padding. The bytes point into the
/// framer's buffer and stay valid until its next `read` or `compact`.
enum StreamFrame {
    case stun(UnsafeRawBufferPointer)
    case channelData(channel: UInt16, data: UnsafeRawBufferPointer)
}

/// Cuts a TURN client's byte stream (TCP, or TLS once decrypted) into STUN messages and
/// ChannelData. A STUN message is its 20-byte header plus the length in it; a ChannelData
/// message is its 4-byte header plus the length in it, padded to a multiple of 4 on a stream,
/// and the padding is skipped here. A partial message stays in the buffer for the next read.
///
/// The buffer is allocated once, in `init`, and never grows: a message that cannot fit is a
/// framing error, as are leading bits that are neither STUN's (00) nor ChannelData's (01).
/// Owned by one thread at a time (the control thread before and after a run, the receiving
/// thread during it).
final class StreamFramer {
    /// The largest message, padding included, that fits.
    let capacity: Int
    private let buffer: UnsafeMutableRawPointer
    /// Bytes `start..<end` are read and not yet framed.
    private var start = 0
    private var end = 0

    init(capacity: Int) {
        self.capacity = capacity
        buffer = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Where the next read may write, after moving a partial message to the front: never
    /// empty unless a whole message of `capacity` bytes is waiting to be framed.
    var space: UnsafeMutableRawBufferPointer {
        if end == capacity { compact() }
        return UnsafeMutableRawBufferPointer(start: buffer + end, count: capacity - end)
    }

    /// Takes `count` bytes just written into `space`.
    func didRead(_ count: Int) {
        precondition(count >= 0 && end + count <= capacity, "read past the framer's space")
        end += count
    }

    /// Bytes read and not yet handed out as messages.
    var buffered: Int { end - start }

    /// The next whole message, nil when only part of one (or nothing) is buffered; throws
    /// `malformed` on bytes that cannot start a message.
    func next() throws(StreamFramingError) -> StreamFrame? {
        let available = end - start
        guard available >= 4 else { return nil }
        let head = UnsafeRawBufferPointer(start: buffer + start, count: available)
        let first = head[0]
        let length = Int(head.bigEndianUInt16(at: 2))
        let size: Int, consumed: Int
        if ChannelData.isChannelData(first) {
            size = ChannelData.headerSize + length
            consumed = (size + 3) & ~3
        } else if first & 0xC0 == 0 {
            guard length % 4 == 0 else { throw .malformed("a STUN message whose length \(length) is not a multiple of 4") }
            size = AttributeIndex.headerSize + length
            consumed = size
        } else {
            throw .malformed("a message starting 0x\(String(first, radix: 16)): neither STUN nor ChannelData")
        }
        guard consumed <= capacity else {
            throw .malformed("a message of \(consumed) bytes, more than the \(capacity) this client takes")
        }
        guard available >= consumed else { return nil }
        start += consumed
        let bytes = UnsafeRawBufferPointer(start: head.baseAddress, count: size)
        if ChannelData.isChannelData(first) {
            return .channelData(channel: head.bigEndianUInt16(at: 0),
                                data: UnsafeRawBufferPointer(rebasing: bytes[ChannelData.headerSize...]))
        }
        return .stun(bytes)
    }

    /// Moves the partial message at the end to the front of the buffer.
    func compact() {
        if start == end {
            start = 0
            end = 0
        } else if start > 0 {
            (buffer).copyMemory(from: buffer + start, byteCount: end - start)
            end -= start
            start = 0
        }
    }
}

/// A byte stream that is not TURN's framing: the connection cannot go on.
enum StreamFramingError: Error, Equatable {
    case malformed(String)

    var reason: String {
        switch self { case .malformed(let text): "framing error: \(text)" }
    }
}

extension UnsafeRawBufferPointer {
    @inline(__always)
    fileprivate func bigEndianUInt16(at offset: Int) -> UInt16 {
        UInt16(self[offset]) << 8 | UInt16(self[offset + 1])
    }
}
