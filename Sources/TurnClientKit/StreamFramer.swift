import STUN

/// One message cut out of a TURN byte stream (RFC 8656 section 12.5): a STUN message whole, or
/// the data of a ChannelData message without its header and padding. The bytes point into the
/// framer's buffer and stay valid until its next `read` or `compact`.
package enum FramedMessage {
    case stun(UnsafeRawBufferPointer)
    case channelData(channel: UInt16, data: UnsafeRawBufferPointer)
}

/// Keeps a TURN client's byte stream (TCP, or TLS once decrypted) and hands it out as STUN
/// messages and ChannelData. Where a message ends is the STUN codec's `StreamFrame` verdict
/// (the one framing rule, RFC 8656 section 12.5: ChannelData padded to 4 on a stream, the
/// padding skipped here); this type owns the bytes. A partial message stays in the buffer for
/// the next read.
///
/// The buffer is allocated once, in `init`, and never grows: a message that cannot fit is a
/// framing error, as is anything `StreamFrame` refuses.
/// Owned by one thread at a time (the control thread before and after a run, the receiving
/// thread during it).
final class StreamFramer {
    /// The largest message, padding included, that fits.
    package let capacity: Int
    private let buffer: UnsafeMutableRawPointer
    /// Bytes `start..<end` are read and not yet framed.
    private var start = 0
    private var end = 0

    package init(capacity: Int) {
        self.capacity = capacity
        buffer = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Where the next read may write, after moving a partial message to the front: never
    /// empty unless a whole message of `capacity` bytes is waiting to be framed.
    package var space: UnsafeMutableRawBufferPointer {
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
    package func next() throws(StreamFramingError) -> FramedMessage? {
        let head = UnsafeRawBufferPointer(start: buffer + start, count: end - start)
        switch StreamFrame.front(of: head, maximum: capacity) {
        case .incomplete:
            return nil
        case .invalid(let error):
            throw .malformed(explain(error, head))
        case .message(let length, let consumed):
            guard consumed <= capacity else { throw .malformed(explain(.tooLarge, head)) }
            start += consumed
            let bytes = UnsafeRawBufferPointer(start: head.baseAddress, count: length)
            if ChannelData.isChannelData(head[0]) {
                return .channelData(channel: UInt16(head[0]) << 8 | UInt16(head[1]),
                                    data: UnsafeRawBufferPointer(rebasing: bytes[ChannelData.headerSize...]))
            }
            return .stun(bytes)
        }
    }

    /// STUN's framing verdict said for a user, with the bytes that earned it.
    private func explain(_ error: StreamFrameError, _ head: UnsafeRawBufferPointer) -> String {
        let declared = head.count >= 4 ? Int(UInt16(head[2]) << 8 | UInt16(head[3])) : 0
        switch error {
        case .notTURN: return "a message starting 0x\(String(head[0], radix: 16)): neither STUN nor ChannelData"
        case .badLength: return "a STUN message whose length \(declared) is not a multiple of 4"
        case .badChannel: return "ChannelData on channel 0x\(String(UInt16(head[0]) << 8 | UInt16(head[1]), radix: 16)), outside the channel range"
        case .tooLarge: return "a message of \(declared) bytes after its header, more than the \(capacity) this client takes"
        }
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

    package var reason: String {
        switch self { case .malformed(let text): "framing error: \(text)" }
    }
}
