@testable import ClientSockets
import Glibc
import MallocCounter
import STUN
@testable import TurnClientKit
import XCTest
@testable import LoadGen

/// The sending loops' outlet: UDP flows with TURN framing (ChannelData, Send indications) and a
/// flow on a TURN client's stream, mixed, leave as asked and without allocating per datagram.
final class FlowOutletTests: XCTestCase {
    func testMixedFlowsLeaveFramedWithoutAllocating() throws {
        let loopback = try SocketAddress(host: "127.0.0.1", port: 0)
        let sender = try TrafficSocket(bindTo: loopback, tos: 0)
        let receiver = try TrafficSocket(bindTo: loopback, tos: 0)
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        XCTAssertEqual(socketpair(AF_UNIX, type, 0, &fds), 0)
        defer { close(fds[1]) }
        let connection = TurnStreamConnection(fd: fds[0], tls: nil, server: receiver.localAddress, host: "127.0.0.1", context: nil,
                                        inputCapacity: 8192, outputCapacity: 65536)
        let peer = try SocketAddress(hostPort: "192.0.2.1:5004")
        let flows = [
            Flow(route: .datagram(sender, receiver.localAddress), stream: 0, framing: .channelData(0x4000)),
            Flow(route: .datagram(sender, receiver.localAddress), stream: 1, framing: .sendIndication(to: peer)),
            Flow(route: .stream(connection), stream: 2, framing: .channelData(0x4001)),
        ]
        let outlet = FlowOutlet(flows: flows, maxSize: 200)
        let rounds = 50
        malloc_counter_start()
        var sent = 0
        for round in 0..<rounds {
            for f in 0..<3 {
                sent += outlet.send(f, header: PayloadHeader(stream: UInt32(f), sequence: UInt64(round), sendTime: 0, tos: 0), size: 161)
            }
        }
        sent += outlet.flush()
        let allocations = malloc_counter_stop()
        XCTAssertEqual(allocations, 0, "no allocation per datagram on either path")
        XCTAssertEqual(sent, 3 * rounds)

        // The UDP side: ChannelData unpadded, Send indications valid STUN with their DATA.
        var buffer = [UInt8](repeating: 0, count: 2048)
        var channelData = 0, indications = 0
        while case let n = recv(receiver.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)), n > 0 {
            let datagram = Array(buffer[0..<n])
            if ChannelData.isChannelData(datagram[0]) {
                XCTAssertEqual(n, 4 + 161, "over UDP ChannelData goes unpadded")
                channelData += 1
            } else {
                let message = try StunMessage(bytes: datagram)
                XCTAssertEqual(message.type, MessageType(.send, .indication))
                XCTAssertEqual(try message.value(.data) { $0.count }, 161)
                indications += 1
            }
        }
        XCTAssertEqual(channelData, rounds)
        XCTAssertEqual(indications, rounds)
        // The stream side: padded to 4 after the 4-byte header.
        var streamBytes = 0
        while case let n = recv(fds[1], &buffer, buffer.count, Int32(MSG_DONTWAIT)), n > 0 { streamBytes += n }
        XCTAssertEqual(streamBytes, rounds * (4 + 164))
    }
}
