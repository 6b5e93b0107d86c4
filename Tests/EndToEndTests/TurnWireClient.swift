@testable import ClientSockets
import DatagramEngine
import Foundation
import Glibc
@testable import LoadGen
import NetAddress
import STUN

/// A TURN client for end-to-end tests that writes each request's bytes itself, on a plain
/// socket of the load generator's (no code of the relay's engine): so a test can send exactly
/// the message it means, signed with long-term credentials, and read the answer as sent
/// (the requests themselves: TurnWireClient+Requests.swift).
final class TurnWireClient {
    let socket: TrafficSocket
    /// Where requests go: the TURN listener it was given, or an alternate a test moved it to.
    var server: SocketAddress
    let username: String
    let password: String
    var realm = ""
    var nonce = ""
    /// Where the last message `exchange` or `nextIndicationData` returned came from: a client
    /// (and every NAT and firewall on its way) drops an answer from another address than the
    /// one it sent to.
    private(set) var lastSource: Endpoint?

    /// A socket on `host` (any port) that talks to the TURN listener at `server`.
    init(server: Endpoint, host: String = "127.0.0.1", username: String = "alice", password: String = "secret") throws {
        socket = try TrafficSocket(bindTo: SocketAddress(host: host, port: 0), tos: 0)
        self.server = try SocketAddress(host: server.hostText, port: server.port)
        self.username = username
        self.password = password
    }

    /// A Send indication to `peer` (never answered).
    func sendIndication(to peer: Endpoint, _ payload: [UInt8]) throws {
        var builder = MessageBuilder(MessageType(.send, .indication), transactionID: .random())
        builder.append(.xorPeerAddress, xorAddress: peer)
        builder.append(.data, payload)
        try send(builder.bytes)
    }

    func send(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { raw in server.withSockaddr { sendto(socket.fd, raw.baseAddress, raw.count, 0, $0, $1) } }
        guard sent == bytes.count else { throw LoadError("sendto \(server): errno \(errno)") }
    }

    /// Sends `request` and returns the STUN answer with its transaction ID (other datagrams,
    /// such as Data indications, are skipped); throws after `seconds` without one.
    func exchange(_ request: [UInt8], seconds: Double = 5) throws -> StunMessage {
        try send(request)
        let id = Array(request[8..<20])
        guard let answer = nextMessage(seconds: seconds, where: { Array($0.bytes[8..<20]) == id }) else {
            throw LoadError("no answer from \(server) within \(seconds) s")
        }
        return answer
    }

    /// The DATA of the next Data indication to arrive within `seconds`.
    func nextIndicationData(seconds: Double = 5) throws -> [UInt8] {
        let isData: (StunMessage) -> Bool = { $0.method == .data && $0.messageClass == .indication && $0.index.first(.data) != nil }
        guard let message = nextMessage(seconds: seconds, where: isData), let slot = message.index.first(.data) else {
            throw LoadError("no Data indication within \(seconds) s")
        }
        return Array(message.bytes[slot.offset..<(slot.offset + slot.length)])
    }

    /// The next STUN message to arrive that `wanted` accepts, skipping the others; nil after
    /// `seconds`.
    private func nextMessage(seconds: Double, where wanted: (StunMessage) -> Bool) -> StunMessage? {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while Date() < deadline {
            var ready = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            var name = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &name) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(socket.fd, &buffer, buffer.count, 0, $0, &length) }
            }
            guard count >= 20, let message = try? StunMessage(bytes: Array(buffer[..<count])), wanted(message) else { continue }
            lastSource = Endpoint(reading: &name, length: length)
            return message
        }
        return nil
    }
}
