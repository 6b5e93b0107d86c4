@testable import ClientSockets
import NetAddress
import STUN
@testable import TurnClientKit
import XCTest
@testable import LoadGen

/// The load generator's TURN stream framer (RFC 8656 section 12.5): one valid stream, delivered
/// whole, a byte per read and in uneven reads of many messages each, gives the same messages;
/// ChannelData's padding is skipped; each malformed shape is refused with its reason.
final class StreamFramerTests: XCTestCase {
    /// What a framed message is, copied out of the framer's buffer.
    private enum Message: Equatable {
        case stun([UInt8])
        case channelData(UInt16, [UInt8])
    }

    /// A STUN request, ChannelData of every padding (data of 0 to 5 bytes, 160 and 1,001), a
    /// Data indication, and a STUN answer at the end: with the messages the stream must give.
    private func sampleStream() -> (bytes: [UInt8], messages: [Message]) {
        var bytes: [UInt8] = []
        var messages: [Message] = []
        var request = MessageBuilder(MessageType(.refresh, .request), transactionID: .random())
        request.append(.lifetime, uint32: 600)
        request.appendFingerprint()
        bytes += request.bytes
        messages.append(.stun(request.bytes))
        for length in [0, 1, 2, 3, 4, 5, 160, 1001] {
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ length) }
            let channel = UInt16(0x4000 + length)
            bytes += [UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(length >> 8), UInt8(length & 0xFF)] + data
            // The sender pads to 4 on a stream; the padding is not data.
            bytes += [UInt8](repeating: 0xEE, count: (4 - length % 4) % 4)
            messages.append(.channelData(channel, data))
        }
        var indication = [UInt8](repeating: 0, count: 256)
        let payload = [UInt8](repeating: 0x42, count: 37)
        let size = payload.withUnsafeBytes { data in
            indication.withUnsafeMutableBytes { out in
                DataIndication.write(peer: Endpoint(host: "192.0.2.7", port: 5004)!, payload: data, id: .random(), to: out, at: 0)
            }
        }
        bytes += indication[0..<size]
        messages.append(.stun(Array(indication[0..<size])))
        var answer = MessageBuilder(MessageType(.refresh, .successResponse), transactionID: .random())
        answer.append(.lifetime, uint32: 600)
        bytes += answer.bytes
        messages.append(.stun(answer.bytes))
        return (bytes, messages)
    }

    /// Feeds `bytes` to a framer in reads of the sizes `chunks` gives (cycled), collecting the
    /// messages after every read, as a connection does.
    private func frame(_ bytes: [UInt8], capacity: Int = 4096, chunks: [Int]) throws -> [Message] {
        let framer = StreamFramer(capacity: capacity)
        var messages: [Message] = []
        var offset = 0, chunk = 0
        while offset < bytes.count {
            let space = framer.space
            let count = min(chunks[chunk % chunks.count], space.count, bytes.count - offset)
            chunk += 1
            XCTAssertGreaterThan(count, 0, "the framer always has room for the next read")
            bytes.withUnsafeBytes { space.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: count) }
            framer.didRead(count)
            offset += count
            while let message = try framer.next() {
                switch message {
                case .stun(let raw): messages.append(.stun(Array(raw)))
                case .channelData(let channel, let data): messages.append(.channelData(channel, Array(data)))
                }
            }
        }
        XCTAssertEqual(framer.buffered, 0, "nothing left over")
        return messages
    }

    func testOneStreamWholeByteByByteAndManyPerReadGivesTheSameMessages() throws {
        let (bytes, expected) = sampleStream()
        XCTAssertEqual(try frame(bytes, chunks: [bytes.count]), expected, "whole")
        XCTAssertEqual(try frame(bytes, chunks: [1]), expected, "a byte per read")
        XCTAssertEqual(try frame(bytes, chunks: [3, 97, 5, 1400, 2, 61]), expected, "uneven reads of many messages each")
        // A buffer just larger than the largest message: partial messages move to the front.
        XCTAssertEqual(try frame(bytes, capacity: 1008, chunks: [700, 13]), expected, "a small buffer, compacted")
    }

    func testChannelDataPaddingIsSkippedAndNotData() throws {
        // Data of 5 bytes takes 12 on the stream: 4 of header, 5 of data, 3 of padding.
        let padded: [UInt8] = [0x40, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5, 0, 0, 0, 0x40, 0x02, 0x00, 0x01, 9, 0, 0, 0]
        XCTAssertEqual(try frame(padded, chunks: [1]), [.channelData(0x4001, [1, 2, 3, 4, 5]), .channelData(0x4002, [9])])
        // Without its padding yet, the message is not whole.
        let framer = StreamFramer(capacity: 64)
        padded.withUnsafeBytes { framer.space.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 9) }
        framer.didRead(9)
        XCTAssertNil(try framer.next(), "the padding is part of the message on a stream")
    }

    func testMalformedStreamsAreRefusedWithTheirReason() {
        let cases: [([UInt8], String)] = [
            ([0x80, 0x01, 0x00, 0x00], "neither STUN nor ChannelData"),
            ([0xC0, 0x00, 0x00, 0x00], "neither STUN nor ChannelData"),
            ([0x00, 0x01, 0x00, 0x06] + [UInt8](repeating: 0, count: 16), "not a multiple of 4"),
            ([0x40, 0x00, 0xFF, 0xFF], "more than the 64 this client takes"),
            // A STUN header is judged by its magic cookie before its size.
            ([0x01, 0x01, 0x01, 0x00, 0x21, 0x12, 0xA4, 0x42], "more than the 64 this client takes"),
        ]
        for (bytes, reason) in cases {
            XCTAssertThrowsError(try frame(bytes, capacity: 64, chunks: [bytes.count])) { error in
                let text = (error as? StreamFramingError)?.reason ?? "\(error)"
                XCTAssertTrue(text.contains(reason), "\(bytes): \(text)")
            }
        }
    }

    /// What the senders write: ChannelData padded on a stream only; a Send indication a valid
    /// STUN message (its DATA padded to 4 always) whose peer and data are the ones asked for.
    func testSenderFramingChannelDataAndSendIndications() throws {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 16)
        defer { buffer.deallocate() }
        let channel = TurnFraming.channelData(0x4000)
        XCTAssertEqual(channel.padding(33, stream: true), 3)
        XCTAssertEqual(channel.padding(33, stream: false), 0, "over UDP ChannelData goes unpadded")
        XCTAssertEqual(channel.padding(32, stream: true), 0)
        for peer in ["192.0.2.9:5004", "[2001:db8::9]:5004"] {
            let address = try SocketAddress(hostPort: peer)
            let indication = TurnFraming.sendIndication(to: address)
            for length in 32...36 {
                buffer.initializeMemory(as: UInt8.self, repeating: 0xAA, count: 256)
                indication.write(into: buffer, payload: length, stream: false)
                (buffer + indication.headerSize).initializeMemory(as: UInt8.self, repeating: UInt8(length), count: length)
                let total = indication.headerSize + length + indication.padding(length, stream: false)
                XCTAssertEqual(total % 4, 0)
                let message = try StunMessage(copying: UnsafeRawBufferPointer(start: buffer, count: total))
                XCTAssertEqual(message.type, MessageType(.send, .indication))
                XCTAssertEqual(message.socketAddress(.xorPeerAddress)?.description, address.description)
                XCTAssertEqual(try message.value(.data) { Array($0) }, [UInt8](repeating: UInt8(length), count: length))
            }
        }
    }
}
