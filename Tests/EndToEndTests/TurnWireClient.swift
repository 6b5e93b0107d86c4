import DatagramEngine
import Foundation
import Glibc
@testable import LoadGen
import NetAddress
import STUN

/// A TURN client for end-to-end tests that writes each request's bytes itself, on a plain
/// socket of the load generator's (no code of the relay's engine): so a test can send exactly
/// the message it means, signed with long-term credentials, and read the answer as sent.
final class TurnWireClient {
    let socket: LoadGen.UDPSocket
    let server: SocketAddress
    let username: String
    let password: String
    var realm = ""
    var nonce = ""

    /// A socket on `host` (any port) that talks to the TURN listener at `server`.
    init(server: Endpoint, host: String = "127.0.0.1", username: String = "alice", password: String = "secret") throws {
        socket = try LoadGen.UDPSocket(bindTo: SocketAddress(host: host, port: 0), tos: 0)
        self.server = try SocketAddress(host: server.hostText, port: server.port)
        self.username = username
        self.password = password
    }

    var key: [UInt8] { LongTermKey.derive(username: username, realm: realm, password: password, algorithm: .md5) }

    /// `method` signed with the current nonce, with FINGERPRINT; `attributes` appends the
    /// method's own first.
    func signed(_ method: Method, _ attributes: (inout MessageBuilder) -> Void = { _ in }) -> [UInt8] {
        var builder = integrity(method, attributes)
        builder.appendFingerprint()
        return builder.bytes
    }

    /// `method` up to and including MESSAGE-INTEGRITY, for a test that appends more after it.
    func integrity(_ method: Method, _ attributes: (inout MessageBuilder) -> Void = { _ in }) -> MessageBuilder {
        var builder = MessageBuilder(MessageType(method, .request), transactionID: .random())
        attributes(&builder)
        builder.append(.username, text: username)
        builder.append(.realm, text: realm)
        builder.append(.nonce, text: nonce)
        builder.appendIntegrity(.messageIntegrity, key: key)
        return builder
    }

    /// Learns the realm and nonce from a 401 to a bare Allocate.
    func learnChallenge() throws {
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        bare.append(.requestedTransport, [17, 0, 0, 0])
        let answer = try exchange(bare.bytes)
        guard answer.errorCode?.code == 401, let fresh = try? answer.text(.nonce), let named = try? answer.text(.realm) else {
            throw LoadError("a bare Allocate was answered \(answer.type) \(answer.errorCode.map { "\($0.code)" } ?? "")")
        }
        nonce = fresh
        realm = named
    }

    /// Sends a signed request; on 401 or 438 learns the realm and nonce and sends it once more.
    func ask(_ method: Method, _ attributes: (inout MessageBuilder) -> Void = { _ in }) throws -> StunMessage {
        for _ in 0..<2 {
            let answer = try exchange(signed(method, attributes))
            let code = answer.errorCode?.code
            if code == 401 || code == 438, let fresh = try? answer.text(.nonce), fresh != nonce {
                nonce = fresh
                realm = (try? answer.text(.realm)) ?? realm
                continue
            }
            return answer
        }
        throw LoadError("\(method) was challenged twice")
    }

    /// An Allocate for a relayed address of `family` (IPv4 by default); the relayed address.
    func allocate(family: AddressFamily = .ipv4) throws -> Endpoint {
        let answer = try ask(.allocate) { builder in
            builder.append(.requestedTransport, [17, 0, 0, 0])
            if family == .ipv6 { builder.append(.requestedAddressFamily, [AddressFamily.ipv6.rawValue, 0, 0, 0]) }
        }
        guard answer.messageClass == .successResponse, let relayed = try answer.xorAddress(.xorRelayedAddress) else {
            throw LoadError("Allocate refused: \(answer.errorCode.map { "\($0.code) \($0.reason)" } ?? "no relayed address")")
        }
        return relayed
    }

    func permit(_ peer: Endpoint) throws -> StunMessage {
        try ask(.createPermission) { $0.append(.xorPeerAddress, xorAddress: peer) }
    }

    func bind(_ channel: UInt16, _ peer: Endpoint) throws -> StunMessage {
        try ask(.channelBind) { builder in
            builder.append(.channelNumber, [UInt8(channel >> 8), UInt8(channel & 0xFF), 0, 0])
            builder.append(.xorPeerAddress, xorAddress: peer)
        }
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
            let count = recv(socket.fd, &buffer, buffer.count, 0)
            guard count >= 20, let message = try? StunMessage(bytes: Array(buffer[..<count])), wanted(message) else { continue }
            return message
        }
        return nil
    }
}
