import ClientSockets
import STUN

/// How a TURN client's datagram is framed on its way to the server (RFC 8656): ChannelData on
/// a bound channel, a Send indication to the peer, or nothing (a flow that is not TURN).
///
/// A plain value of fixed size (the indication's header is held inline), so the sending loops
/// copy it per datagram without touching the heap. A flow's Send indications all carry one
/// transaction ID, drawn when the flow is set up: RFC 8489 section 6 gives an indication's ID
/// no meaning to the server, and a fixed one keeps the header a copy with two lengths patched.
package struct TurnFraming: Sendable {
    /// The longest header a Send indication has: 20 bytes, XOR-PEER-ADDRESS of an IPv6 peer
    /// (4 + 20), DATA's own 4.
    static let indicationCapacity = 48
    /// Bytes framing adds to a payload at most: that header and 3 of padding.
    package static let maxOverhead = indicationCapacity + 3

    package static let none = TurnFraming(channel: 0, indicationLength: 0)

    /// The channel of ChannelData framing; 0 otherwise.
    package let channel: UInt16
    /// The length of the Send indication's header in `indication`; 0 when not a Send indication.
    let indicationLength: Int
    private var indication = InlineArray<48, UInt8>(repeating: 0)

    private init(channel: UInt16, indicationLength: Int) {
        self.channel = channel
        self.indicationLength = indicationLength
    }

    /// ChannelData on `number` (RFC 8656 section 12.4).
    package static func channelData(_ number: UInt16) -> TurnFraming {
        TurnFraming(channel: number, indicationLength: 0)
    }

    /// A Send indication to `peer` (RFC 8656 section 11.3): XOR-PEER-ADDRESS, then DATA.
    package static func sendIndication(to peer: SocketAddress) -> TurnFraming {
        var builder = MessageBuilder(MessageType(.send, .indication), transactionID: .random())
        builder.append(.xorPeerAddress, address: peer)
        builder.append(.data, [])
        var framing = TurnFraming(channel: 0, indicationLength: builder.bytes.count)
        for (i, byte) in builder.bytes.enumerated() { framing.indication[i] = byte }
        return framing
    }

    package var isNone: Bool { channel == 0 && indicationLength == 0 }

    /// Bytes in front of the payload.
    package var headerSize: Int { channel != 0 ? ChannelData.headerSize : indicationLength }

    /// Zero bytes after a payload of `length`: DATA is an attribute and always padded to 4;
    /// ChannelData is padded on a stream only (RFC 8656 section 12.5), never over UDP here.
    @inline(__always)
    package func padding(_ length: Int, stream: Bool) -> Int {
        indicationLength > 0 || (stream && channel != 0) ? (4 - (length & 3)) & 3 : 0
    }

    /// Writes the header for a payload of `length` bytes at `buffer` (`headerSize` bytes), and
    /// `padding` zero bytes after where the payload will end.
    @inline(__always)
    package func write(into buffer: UnsafeMutableRawPointer, payload length: Int, stream: Bool) {
        let pad = padding(length, stream: stream)
        if channel != 0 {
            buffer.storeBytes(of: channel.bigEndian, toByteOffset: 0, as: UInt16.self)
            buffer.storeBytes(of: UInt16(length).bigEndian, toByteOffset: 2, as: UInt16.self)
        } else if indicationLength > 0 {
            for i in 0..<indicationLength { buffer.storeBytes(of: indication[i], toByteOffset: i, as: UInt8.self) }
            let messageLength = indicationLength - AttributeIndex.headerSize + length + pad
            buffer.storeBytes(of: UInt16(messageLength).bigEndian, toByteOffset: 2, as: UInt16.self)
            buffer.storeBytes(of: UInt16(length).bigEndian, toByteOffset: indicationLength - 2, as: UInt16.self)
        }
        if pad > 0 { (buffer + headerSize + length).initializeMemory(as: UInt8.self, repeating: 0, count: pad) }
    }
}
