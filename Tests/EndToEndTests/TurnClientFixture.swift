@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import STUN
@testable import TurnClientKit

/// One TURN client of the relay under test, built from the load generator's client (its own
/// socket, its own credential handling), so what the relay answers is read by code that
/// shares nothing with the relay's TURN server. Transactions retransmit and follow 401 and
/// 438 as a real client does (`TurnTransactions`).
struct TurnClientFixture {
    let client: TurnAllocationClient
    let server: SocketAddress

    init(serverPort: UInt16, username: String = "alice", password: String = "secret") throws {
        server = try SocketAddress(host: "127.0.0.1", port: serverPort)
        client = TurnAllocationClient(socket: try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0),
                            server: server, username: username, password: password)
    }

    /// The final answer to one request of `method`, or nil when none came after the retries.
    func run(_ method: Method, _ attributes: @escaping (inout MessageBuilder) -> Void) -> StunMessage? {
        TurnTransactions(answers: .sockets, interruptible: false).run([client], method) { _, builder in attributes(&builder) }[0]
    }

    func allocate() -> StunMessage? {
        run(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
    }

    func bind(_ channel: UInt16, to peer: SocketAddress) -> StunMessage? {
        run(.channelBind) { builder in
            builder.append(.channelNumber, [UInt8(channel >> 8), UInt8(channel & 0xFF), 0, 0])
            builder.append(.xorPeerAddress, address: peer)
        }
    }

    /// Sends `bytes` once from the client's socket, without waiting for an answer.
    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { raw in
            server.withSockaddr { sendto(client.socket.fd, raw.baseAddress, raw.count, 0, $0, $1) }
        }
    }

    /// The next datagram on the client's socket that parses as STUN, or nil after `seconds`.
    func receive(seconds: Double = 10) -> StunMessage? {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while Date() < deadline {
            var ready = pollfd(fd: client.socket.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            let count = recv(client.socket.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0, let message = try? StunMessage(bytes: Array(buffer[0..<count])) { return message }
        }
        return nil
    }
}
