import Glibc
import NetAddress
import XCTest
@testable import DatagramEngine

/// io_uring only: closing a UDP socket waits for its receive's last completion, and meanwhile
/// the engine goes on taking other completions, accepts among them. An accept may take the very
/// slot the closing socket just freed. The wait must follow the socket (slot and generation),
/// not the slot: following the slot, it took the new connection for the closing socket, waited
/// for a completion that never came, and at last closed the connection's descriptor under its
/// stream (seen as resets with 2,000 TURN clients over TCP).
final class RingUnregisterTests: XCTestCase {
    func testAConnectionAcceptedWhileASocketClosesIsNotClosedWithIt() throws {
        // Few provided buffers, so that a burst ends the socket's multishot receive (ENOBUFS).
        let echo = try StreamEchoHarness(backend: .uring) { $0.batchSize = 4; $0.uringBuffers = 8; $0.gro = false }
        let engine = echo.engine
        let udp = try UDPSocket(binding: Loopback.v4)
        let address = udp.localEndpoint
        let socket = try engine.register(udp)
        let quiet = try engine.register(UDPSocket(binding: Loopback.v4))
        let sender = try UDPSocket(binding: Loopback.v4)
        let sink = try UDPSocket(binding: Loopback.v4)
        echo.turn()  // arms the socket's receive and the listener's accept
        for _ in 0..<32 { Loopback.send(from: sender, to: address, bytes: [1, 2, 3, 4]) }
        // A flush with a datagram send reaps while it waits: the burst's receive completions,
        // the ending one among them, are kept for the next turn instead of handled.
        [UInt8](repeating: 7, count: 8).withUnsafeBytes { bytes in
            engine.enqueue(socket: socket, to: sink.localEndpoint, trafficClass: TrafficClass(rawValue: 0), bytes: bytes)
        }
        engine.flush()
        // A connection waits in the backlog. Closing both sockets at once, the flooded one's
        // receive has already ended (its last completion is kept) and frees its slot first;
        // the accept completes while the engine waits for the quiet one's cancellation, and
        // takes that slot (the table reuses the last freed slot first).
        let client = TCPClientFixture.connect(to: echo.server)
        defer { close(client) }
        usleep(20_000)
        engine.unregister([socket, quiet])

        XCTAssertTrue(echo.run(seconds: 5) { echo.accepted.count == 1 })
        XCTAssertEqual(echo.accepted.first?.slot, socket.slot, "the case under test: the connection took the closed socket's slot")
        let ping: [UInt8] = Array("ping".utf8)
        XCTAssertEqual(ping.withUnsafeBytes { TCPClientFixture.send(client, $0) }, .bytes(4))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        XCTAssertEqual(echo.receive(client, into: buffer), .bytes(4), "the connection accepted during the close is served")
        XCTAssertEqual(Array(buffer[0..<4]), ping)
        XCTAssertEqual(echo.closed.count, 0)
        XCTAssertEqual(engine.counters.receiveCancelsForced, 0, "no wait needed forcing")
    }
}
