@testable import ClientSockets
import Glibc
import MallocCounter
@testable import TurnClientKit
import XCTest
@testable import LoadGen

/// A TURN client's stream connection on its own, over a socket pair: what it writes is framed
/// ChannelData padded to 4, what it reads comes out as the same messages, neither allocates per
/// message, and a peer that closes fails the connection with the reason.
final class TurnConnectionTests: XCTestCase {
    /// A connection on one end of a non-blocking stream socket pair; the test holds the other.
    private func connectionPair() throws -> (connection: TurnStreamConnection, other: Int32) {
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &fds) == 0 else { throw LoadError("socketpair: errno \(errno)") }
        let connection = TurnStreamConnection(fd: fds[0], tls: nil, server: try SocketAddress(hostPort: "127.0.0.1:3478"), host: "127.0.0.1",
                                        context: nil, inputCapacity: 8192, outputCapacity: 16384)
        return (connection, fds[1])
    }

    /// Everything the other end has received by now.
    private func drain(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while case let n = recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT)), n > 0 { bytes += chunk[0..<n] }
        return bytes
    }

    func testDatagramsGoFramedAndPaddedAndComeBackWithoutAllocating() throws {
        let (connection, other) = try connectionPair()
        defer { close(other) }
        let framing = TurnFraming.channelData(0x4000)
        let sizes = (0..<100).map { 33 + $0 % 4 }
        XCTAssertTrue(connection.send(header: PayloadHeader(stream: 9, sequence: 0, sendTime: 0, tos: 0), size: 32, framing: framing))
        _ = drain(other)  // the first send out of the counted loop: lazy set-up anywhere is not per message

        // Indices, not enumerated(): the debug build's enumerated iterator allocates.
        malloc_counter_start()
        var accepted = 0
        for i in sizes.indices {
            let header = PayloadHeader(stream: 1, sequence: UInt64(i), sendTime: 0, tos: 0)
            if connection.send(header: header, size: sizes[i], framing: framing) { accepted += 1 }
        }
        let sendAllocations = malloc_counter_stop()
        XCTAssertEqual(sendAllocations, 0, "sending allocates nothing per datagram")
        XCTAssertEqual(accepted, sizes.count)

        let wire = drain(other)
        XCTAssertEqual(wire.count, sizes.reduce(0) { $0 + 4 + ($1 + 3) / 4 * 4 }, "each padded to 4 after its 4-byte header")
        let framer = StreamFramer(capacity: 8192)
        wire.withUnsafeBytes { framer.space.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: wire.count) }
        framer.didRead(wire.count)
        for (i, size) in sizes.enumerated() {
            guard case .channelData(let channel, let data)? = try framer.next() else { return XCTFail("message \(i) missing") }
            XCTAssertEqual(channel, 0x4000)
            XCTAssertEqual(data.count, size, "the length says the data, not the padding")
            XCTAssertEqual(PayloadHeader.decode(data.baseAddress!, length: data.count)?.sequence, UInt64(i))
        }

        // The same bytes back, as a server would relay them.
        XCTAssertEqual(wire.withUnsafeBytes { send(other, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }, wire.count)
        var arrived: [UInt64] = []
        arrived.reserveCapacity(sizes.count)
        malloc_counter_start()
        let open = connection.receive { frame in
            if case .channelData(_, let data) = frame, let header = PayloadHeader.decode(data.baseAddress!, length: data.count) {
                arrived.append(header.sequence)
            }
        }
        let receiveAllocations = malloc_counter_stop()
        XCTAssertEqual(receiveAllocations, 0, "receiving allocates nothing per datagram")
        XCTAssertTrue(open)
        XCTAssertEqual(arrived, (0..<UInt64(sizes.count)).map { $0 })
    }

    func testAPeerThatClosesFailsTheConnectionWithTheReason() throws {
        let (connection, other) = try connectionPair()
        close(other)
        XCTAssertFalse(connection.receive { _ in XCTFail("nothing was sent") })
        XCTAssertEqual(connection.failure, "closed by the server")
        XCTAssertFalse(connection.send(header: PayloadHeader(stream: 0, sequence: 0, sendTime: 0, tos: 0), size: 40, framing: .channelData(0x4000)),
                       "a failed connection takes nothing more")
    }

    func testGarbageFromTheServerFailsOnlyThatConnection() throws {
        let (connection, other) = try connectionPair()
        defer { close(other) }
        let garbage: [UInt8] = [0xFF, 0xFF, 0x00, 0x04, 1, 2, 3, 4]
        XCTAssertEqual(send(other, garbage, garbage.count, Int32(MSG_NOSIGNAL)), garbage.count)
        XCTAssertFalse(connection.receive { _ in })
        XCTAssertTrue(connection.failure?.hasPrefix("framing error: a message starting 0xff") == true, connection.failure ?? "-")
    }
}
