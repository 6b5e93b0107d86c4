import STUN

/// What one message from the server to a TURN client is: application data (from ChannelData
/// or a Data indication), a STUN message for the control thread (answers to requests), or
/// neither. Sorting reads the message in place and allocates nothing.
package enum TurnArrival {
    case data(UnsafeRawBufferPointer)
    case control
    case malformed

    /// A datagram on a client's UDP socket (ChannelData may carry up to 3 bytes of padding).
    @inline(__always)
    package static func of(datagram bytes: UnsafeRawBufferPointer) -> TurnArrival {
        guard let first = bytes.first else { return .malformed }
        guard ChannelData.isChannelData(first) else { return of(stun: bytes) }
        guard let frame = ChannelData.parse(bytes) else { return .malformed }
        return .data(UnsafeRawBufferPointer(rebasing: bytes[ChannelData.headerSize..<(ChannelData.headerSize + frame.length)]))
    }

    /// A message cut from a client's TCP or TLS stream.
    @inline(__always)
    package static func of(frame: FramedMessage) -> TurnArrival {
        switch frame {
        case .channelData(_, let data): .data(data)
        case .stun(let bytes): of(stun: bytes)
        }
    }

    /// A Data indication's DATA is data; any other STUN message is the control thread's.
    private static func of(stun bytes: UnsafeRawBufferPointer) -> TurnArrival {
        guard let index = try? AttributeIndex(parsing: bytes) else { return .malformed }
        guard index.type == MessageType(.data, .indication) else { return .control }
        guard let slot = index.first(.data) else { return .malformed }
        return .data(UnsafeRawBufferPointer(rebasing: bytes[slot.offset..<(slot.offset + slot.length)]))
    }
}
