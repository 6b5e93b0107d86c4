import ClientSockets
import Foundation
import Glibc
import LoadGen
import NetAddress
import STUN
import TestSupport
import TLS

/// A TURN client of the real relay over one TCP connection to 127.0.0.1, or TLS over it
/// (the TLS module's client session: ciphertext moved between it and the socket here), with
/// deadlines on every wait. It cuts the relay's messages out of the stream as a client does
/// (`StreamMessageCut`); its requests are `SigningTurnClient`'s.
final class TurnStreamClientFixture: SigningTurnClient {
    let descriptor: Int32
    let username: String
    let password: String
    var realm = ""
    var nonce = ""
    private let tls: TLSSession?
    /// Plaintext received and not yet cut into messages.
    private var received: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)

    /// Connects to 127.0.0.1:`port` and, given `tls`, completes a handshake for "localhost".
    /// `receiveBufferBytes` sets SO_RCVBUF before the connect, so the window the relay sees is
    /// that small from the start.
    init(port: UInt16, tls context: TLSClientContext? = nil, receiveBufferBytes: Int32? = nil,
         username: String = "alice", password: String = "secret") throws {
        let descriptor = try LoopbackTCP.connect(port: port) { descriptor in
            var one: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if var bytes = receiveBufferBytes {
                setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size))
            }
        }
        self.descriptor = descriptor
        self.username = username
        self.password = password
        tls = try context.map { try TLSSession(client: $0, serverName: "localhost") }
        if tls != nil { try completeHandshake() }
    }

    deinit { close(descriptor) }

    /// The serial of the certificate the relay presented (TLS only).
    var peerCertificateSerial: String? { tls?.peerCertificateSerial }

    private func completeHandshake() throws {
        guard let tls else { return }
        let deadline = Date().addingTimeInterval(10)
        while true {
            let step = tls.handshake()
            try flushCiphertext()
            switch step {
            case .done: return
            case .failed(let failure): throw LoadError("TLS handshake with the relay failed: \(failure) \(tls.failureDetail ?? "")")
            case .inProgress:
                guard try receive(until: deadline) else { throw LoadError("no TLS handshake within 10 s (or the relay closed)") }
            }
        }
    }

    /// Sends all the ciphertext the session has waiting.
    private func flushCiphertext() throws {
        guard let tls else { return }
        while tls.pendingCiphertext > 0 {
            let count = buffer.withUnsafeMutableBytes { tls.takeCiphertext(into: $0) }
            guard count > 0 else { return }
            try sendAll(buffer[0..<count])
        }
    }

    private func sendAll(_ bytes: ArraySlice<UInt8>) throws {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw LoadError("send to the relay: errno \(errno)") }
            offset += sent
        }
    }

    /// Sends `bytes` (over TLS, as one record).
    func write(_ bytes: [UInt8]) throws {
        guard let tls else { return try sendAll(bytes[...]) }
        guard bytes.withUnsafeBytes({ tls.writePlaintext($0) }) else { throw LoadError("the TLS session refused \(bytes.count) bytes") }
        try flushCiphertext()
    }

    /// ChannelData on `channel`, padded to 4 bytes as a stream needs.
    func sendChannelData(_ channel: UInt16, _ payload: [UInt8]) throws {
        let message = [UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
        try write(message + [UInt8](repeating: 0, count: (4 - message.count % 4) % 4))
    }

    /// Reads what the socket has, waiting until `deadline` for something; over TLS, decrypts it.
    /// False at the deadline, at the end of the stream or on an error.
    private func receive(until deadline: Date) throws -> Bool {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let wait = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
        guard poll(&ready, 1, wait) > 0 else { return false }
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return false }
        guard let tls else {
            received += buffer[0..<count]
            return true
        }
        let ciphertext = Array(buffer[0..<count])
        var offset = 0
        while offset < count {
            let taken = ciphertext[offset...].withUnsafeBytes { tls.receiveCiphertext($0) }
            offset += taken
            if tls.isEstablished {
                try decrypt()
            } else if taken == 0 {
                throw LoadError("a handshake flight from the relay overflowed the session's buffer")
            }
        }
        return true
    }

    private func decrypt() throws {
        guard let tls, tls.isEstablished else { return }
        while true {
            switch buffer.withUnsafeMutableBytes({ tls.readPlaintext(into: $0) }) {
            case .bytes(let count): received += buffer[0..<count]
            case .wantMore: return try flushCiphertext()
            case .closed, .failed: return
            }
        }
    }

    /// The next STUN message or ChannelData (without its padding) from the relay, or nil
    /// after `seconds`.
    func readMessage(seconds: Double = 5) throws -> [UInt8]? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let message = StreamMessageCut.next(from: &received) { return message }
            guard try receive(until: deadline) else { return nil }
        }
    }

    func exchange(_ request: [UInt8], seconds: Double = 5) throws -> StunMessage {
        try write(request)
        let deadline = Date().addingTimeInterval(seconds)
        while let bytes = try readMessage(seconds: deadline.timeIntervalSinceNow) {
            if bytes.count >= 20, Array(bytes[8..<20]) == Array(request[8..<20]) { return try StunMessage(bytes: bytes) }
        }
        throw LoadError("no answer from the relay within \(seconds) s")
    }

    /// Allocates, then binds `channel` to `peer`; the relayed address.
    func allocate(channel: UInt16, to peer: Endpoint) throws -> Endpoint {
        let relayed = try allocate()
        let bound = try bind(channel, peer)
        guard bound.messageClass == .successResponse else { throw LoadError("ChannelBind to \(peer) refused: \(bound)") }
        return relayed
    }
}
