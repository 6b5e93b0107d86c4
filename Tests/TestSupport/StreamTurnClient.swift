import Dispatch
import Foundation
import Glibc
import NetAddress
import STUN
import TLS
import XCTest

/// The tests' TURN client over one TCP connection (or TLS over it, through the TLS module's
/// client session: ciphertext moved between it and the socket here), blocking with deadlines,
/// for RelayCore's worker tests and the end-to-end tests alike. It cuts the relay's answers out
/// of the stream with `StreamMessageCut` (STUN's `StreamFrame`). How its bytes are cut into segments is the
/// caller's choice: `write(_:segments:)`; `writeAtOnce` and `writeInBackground` send much at
/// once (over TLS as full records), the latter from a thread while the relay does not read.
public final class StreamTurnClient {
    public let descriptor: Int32
    public let local: Endpoint
    private let tls: TLSSession?
    private var received: [UInt8] = []
    public var nonce = ""
    /// The realm of the relay's last 401 or 438: the long-term key is derived with it.
    public var realm = ""
    public let username: String
    public let password: String

    /// How `write` cuts what it sends into TCP segments (or TLS records).
    public enum Segments: Sendable {
        /// One send of everything.
        case whole
        /// One byte per send, with TCP_NODELAY and a pause, so each is its own segment.
        case bytewise
    }

    /// Connects to `server` (IPv4) and, given `tls`, completes a handshake for "localhost"
    /// unless `handshake` is false. `receiveBufferBytes` sets SO_RCVBUF before the connect, so
    /// the window the relay sees is that small from the start.
    public init(to server: Endpoint, tls context: TLSClientContext? = nil, username: String = "alice", password: String = "secret",
                handshake: Bool = true, receiveBufferBytes: Int32? = nil) throws {
        self.username = username
        self.password = password
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if var bytes = receiveBufferBytes {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        address.sin_addr.s_addr = UInt32(truncatingIfNeeded: server.low).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw StreamClientError("connect to \(server) failed, errno \(errno)")
        }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        local = Endpoint(ipv4: UInt32(bigEndian: bound.sin_addr.s_addr), port: UInt16(bigEndian: bound.sin_port))
        tls = try context.map { try TLSSession(client: $0, serverName: "localhost") }
        if handshake, tls != nil { try completeHandshake() }
    }

    deinit { close(descriptor) }

    /// What ALPN the TLS handshake agreed on (nil over TCP, or when none was).
    public var negotiatedALPN: String? { tls?.negotiatedALPN }

    /// The serial of the certificate the relay presented (TLS only).
    public var peerCertificateSerial: String? { tls?.peerCertificateSerial }

    /// The first flight alone (a test of many handshakes arriving together sends them all
    /// before finishing any).
    public func sendClientHello() {
        _ = tls?.handshake()
        flushCiphertext()
    }

    public func finishHandshake() throws { try completeHandshake() }

    private func completeHandshake() throws {
        guard let tls else { return }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let step = tls.handshake()
            flushCiphertext()
            switch step {
            case .done: return
            case .failed(let failure): throw StreamClientError("handshake failed: \(failure)")
            case .inProgress:
                guard pullCiphertext() else { throw StreamClientError("the relay closed during the handshake") }
            }
        }
        throw StreamClientError("handshake timed out")
    }

    private func flushCiphertext() {
        guard let tls else { return }
        var buffer = [UInt8](repeating: 0, count: 32 << 10)
        while tls.pendingCiphertext > 0 {
            let count = buffer.withUnsafeMutableBytes { tls.takeCiphertext(into: $0) }
            guard count > 0 else { return }
            sendAll(Array(buffer[0..<count]))
        }
    }

    /// Reads what the socket has into the TLS session; false on end of stream or error.
    private func pullCiphertext() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 32 << 10)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return false }
        var offset = 0
        while offset < count {
            let taken = buffer[offset..<count].withUnsafeBytes { tls!.receiveCiphertext($0) }
            offset += taken
            if taken == 0 { drainPlaintext() }
        }
        drainPlaintext()
        return true
    }

    private func drainPlaintext() {
        guard let tls else { return }
        var buffer = [UInt8](repeating: 0, count: 32 << 10)
        while case .bytes(let count) = buffer.withUnsafeMutableBytes({ tls.readPlaintext(into: $0) }) {
            received += buffer[0..<count]
        }
    }

    private func sendAll(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// Sends `bytes` cut as asked (over TLS: one record per piece).
    public func write(_ bytes: [UInt8], segments: Segments = .whole) {
        let pieces: [[UInt8]] = segments == .whole ? [bytes] : bytes.map { [$0] }
        for piece in pieces {
            if let tls {
                _ = piece.withUnsafeBytes { tls.writePlaintext($0) }
                flushCiphertext()
            } else {
                sendAll(piece)
            }
            if segments == .bytewise { usleep(200) }
        }
    }

    /// Sends `bytes` with one send call: over TLS, as full records (16 KiB of plaintext each)
    /// sealed first, their ciphertext together.
    public func writeAtOnce(_ bytes: [UInt8]) throws {
        sendAll(try sealed(bytes))
    }

    /// Sends `bytes` (over TLS, sealed now) from a thread of their own, since the write blocks
    /// while the relay does not read: the semaphore is signalled once all of them are sent
    /// (never, when the connection fails first). The caller reads meanwhile, or stops the
    /// thread by shutting the connection down.
    public func writeInBackground(_ bytes: [UInt8]) throws -> DispatchSemaphore {
        let wire = try sealed(bytes)
        let descriptor = descriptor
        let written = DispatchSemaphore(value: 0)
        Thread {
            wire.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let sent = send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                    guard sent > 0 else { return }
                    offset += sent
                }
                written.signal()
            }
        }.start()
        return written
    }

    /// What goes on the wire for `bytes`: over TLS their records (16 KiB of plaintext each),
    /// which leave the session now and must be sent in this order before anything else.
    private func sealed(_ bytes: [UInt8]) throws -> [UInt8] {
        guard let tls else { return bytes }
        var ciphertext: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 32 << 10)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + (16 << 10))
            guard bytes[offset..<end].withUnsafeBytes({ tls.writePlaintext($0) }) else {
                throw StreamClientError("the TLS session refused \(end - offset) bytes")
            }
            while tls.pendingCiphertext > 0 {
                let count = buffer.withUnsafeMutableBytes { tls.takeCiphertext(into: $0) }
                guard count > 0 else { break }
                ciphertext += buffer[0..<count]
            }
            offset = end
        }
        return ciphertext
    }

    /// The next STUN message or ChannelData from the relay (ChannelData without its padding),
    /// or nil after `seconds`.
    public func readMessage(seconds: Double = 5) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let message = StreamMessageCut.next(from: &received) { return message }
            guard Date() < deadline, readMore() else { return nil }
        }
    }

    /// Called while waiting for the relay, for a relay that turns on the waiting thread (a
    /// worker driven by the test): reads then do not block, and this runs between them.
    public var pump: (() -> Void)?

    private func readMore() -> Bool {
        if tls != nil { return pullCiphertext() }
        var buffer = [UInt8](repeating: 0, count: 32 << 10)
        guard let pump else {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { return false }
            received += buffer[0..<count]
            return true
        }
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            pump()
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                received += buffer[0..<count]
                return true
            }
            if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { return false }
        }
        return false
    }

    /// Whether the relay closes the connection within `seconds` (end of stream or a reset).
    public func closedByRelay(seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 { return true }
            if count < 0 && errno != EAGAIN && errno != EWOULDBLOCK { return true }
        }
        return false
    }

    var key: [UInt8] { LongTermKey.derive(username: username, realm: realm, password: password, algorithm: .md5) }

    /// Sends a signed request; on 401 or 438 takes the realm and nonce and tries once more.
    public func ask(_ method: Method, _ attributes: (inout MessageBuilder) -> Void = { _ in }) -> StunMessage? {
        for _ in 0..<2 {
            var builder = MessageBuilder(MessageType(method, .request), transactionID: .random())
            attributes(&builder)
            if !nonce.isEmpty {
                builder.append(.username, text: username)
                builder.append(.realm, text: realm)
                builder.append(.nonce, text: nonce)
                builder.appendIntegrity(.messageIntegrity, key: key)
            }
            write(builder.bytes)
            guard let bytes = readMessage(), let answer = try? StunMessage(bytes: bytes) else { return nil }
            let code = try? answer.value(.errorCode, AttributeValue.errorCode)?.code
            if code == 401 || code == 438, let fresh = try? answer.text(.nonce) {
                nonce = fresh
                realm = (try? answer.text(.realm)) ?? realm
                continue
            }
            return answer
        }
        return nil
    }

    /// Allocates, then binds `channel` to `peer` (its permission comes with it); the relayed address.
    public func allocate(channel: UInt16, to peer: Endpoint) throws -> Endpoint {
        let allocated = try XCTUnwrap(ask(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }, "no answer to Allocate")
        let relayed = try XCTUnwrap(allocated.xorAddress(.xorRelayedAddress), "Allocate refused: \(allocated)")
        let bound = try XCTUnwrap(ask(.channelBind) { builder in
            builder.append(.channelNumber, [UInt8(channel >> 8), UInt8(channel & 0xFF), 0, 0])
            builder.append(.xorPeerAddress, xorAddress: peer)
        }, "no answer to ChannelBind")
        XCTAssertEqual(bound.messageClass, .successResponse)
        return relayed
    }
}

/// ChannelData on `channel` with `payload`, padded to 4 bytes as a stream needs.
public func paddedChannelData(_ channel: UInt16, _ payload: [UInt8]) -> [UInt8] {
    let message = [UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
    return message + [UInt8](repeating: 0, count: (4 - message.count % 4) % 4)
}

/// Why the client could not connect, finish a handshake, or hear the relay in time.
public struct StreamClientError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
