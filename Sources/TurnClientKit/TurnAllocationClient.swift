import ClientSockets
import Glibc
import STUN
import SystemSupport

/// How one TURN client reaches its server: its own UDP socket, or its own TCP or TLS
/// connection. Either way the server knows the client's allocation by this 5-tuple.
package enum TurnLink: Sendable {
    case datagram(TrafficSocket)
    case stream(TurnStreamConnection)

    /// The descriptor to poll for what the server sends.
    package var fd: Int32 {
        switch self {
        case .datagram(let socket): socket.fd
        case .stream(let connection): connection.fd
        }
    }

    /// Reads what the server has sent by now and hands each message to `body`, sorted, with
    /// the TOS byte it arrived with (nil on a stream, whose segments carry no datagram's
    /// marks). False once the connection has failed.
    @discardableResult
    package func readArrivals(batch: ReceiveBatch, _ body: (TurnArrival, UInt8?) -> Void) -> Bool {
        switch self {
        case .datagram(let socket):
            while true {
                let n = batch.receive(from: socket.fd)
                for i in 0..<n {
                    body(TurnArrival.of(datagram: UnsafeRawBufferPointer(start: batch.payload(i), count: batch.length(i))), batch.tos(i))
                }
                if n < batch.capacity { return true }
            }
        case .stream(let connection):
            return connection.receive { body(TurnArrival.of(frame: $0), nil) }
        }
    }
}

/// One TURN client of a load run: its own socket or connection, its long-term credential
/// state, and what the server granted.
///
/// Control path only, owned by the thread that runs the transactions (set-up, refresh and
/// release on the main thread); the sending and receiving threads share only its link.
package final class TurnAllocationClient {
    package private(set) var link: TurnLink
    /// Where its requests and ChannelData go: the server it was given, or the alternate a 300
    /// named (`redirect`).
    package private(set) var server: SocketAddress
    /// Whether a 300 Try Alternate moved it; it follows one redirect, never a second.
    private(set) var redirected = false
    package let username: String
    package let password: String
    private(set) var realm: String?
    private(set) var nonce: String?
    /// The long-term key, once the server's 401 has named the realm.
    private(set) var key: [UInt8]?
    /// PASSWORD-ALGORITHMS as the server offered it, echoed back (RFC 8489 section 9.2.4).
    private var offeredAlgorithms: [UInt8]?
    private var algorithm = PasswordAlgorithm.md5
    /// XOR-RELAYED-ADDRESS of the allocation, once allocated.
    package var relayed: SocketAddress?
    /// The allocation's lifetime in seconds as the server granted it.
    package var lifetime: UInt32 = 0
    /// The peer its permission and channel are for and its data goes to, set by `TurnClients`:
    /// one for all clients, or its own (`--turn-peers each`).
    package var peer: SocketAddress?

    /// A client over UDP, on `socket`.
    package convenience init(socket: TrafficSocket, server: SocketAddress, username: String, password: String) {
        self.init(link: .datagram(socket), server: server, username: username, password: password)
    }

    package init(link: TurnLink, server: SocketAddress, username: String, password: String) {
        self.link = link
        self.server = server
        self.username = username
        self.password = password
    }

    /// The client's UDP socket. Only UDP clients have one; the tests that speak TURN over UDP
    /// by hand reach it here.
    package var socket: TrafficSocket {
        guard case .datagram(let socket) = link else { preconditionFailure("a TURN client over TCP or TLS has no UDP socket") }
        return socket
    }

    /// The connection of a client over TCP or TLS.
    package var connection: TurnStreamConnection? {
        if case .stream(let connection) = link { return connection }
        return nil
    }

    /// The descriptor to poll for what the server sends this client.
    package var fd: Int32 { link.fd }

    /// Why the client's connection failed (closed, reset, a framing or TLS error); nil over
    /// UDP and while the connection works.
    package var failure: String? { connection?.failure }

    /// Whether the client's connection has failed (a cheap check, no lock).
    var hasFailed: Bool { connection?.isFailed ?? false }

    /// Sends one request to the server. A request the kernel refuses over UDP is lost like one
    /// the network drops (the transaction retransmits); over a stream it fails the client.
    package func send(_ bytes: [UInt8]) {
        switch link {
        case .datagram(let socket):
            SystemCall.ignoringFailure {
                bytes.withUnsafeBytes { raw in server.withSockaddr { sendto(socket.fd, raw.baseAddress, raw.count, 0, $0, $1) } }
            }
        case .stream(let connection):
            if !bytes.withUnsafeBytes({ connection.send($0) }) && !connection.isFailed {
                connection.fail("a request of \(bytes.count) bytes found no room in the connection's output")
            }
        }
    }

    /// A request of `method` for this client: `attributes` appends the method's own, then the
    /// credentials (once known), MESSAGE-INTEGRITY and FINGERPRINT.
    package func request(_ method: Method, _ attributes: (inout MessageBuilder) -> Void) -> MessageBuilder {
        var builder = MessageBuilder(MessageType(method, .request), transactionID: .random())
        attributes(&builder)
        if let realm, let nonce, let key {
            builder.append(.username, text: username)
            builder.append(.realm, text: realm)
            builder.append(.nonce, text: nonce)
            if let offeredAlgorithms {
                builder.append(.passwordAlgorithms, offeredAlgorithms)
                builder.append(.passwordAlgorithm, [0, UInt8(algorithm.rawValue), 0, 0])
            }
            builder.appendIntegrity(key: key)
        }
        builder.appendFingerprint()
        return builder
    }

    /// Follows a 300 Try Alternate (RFC 8489 section 10): from now on the client talks to
    /// `alternate`, and starts its credential dance afresh there (the realm and nonce were the
    /// first server's), as a browser does. A client over TCP or TLS first opens a connection to
    /// the alternate, of the same kind (with `--tls-ca`, its certificate must name the
    /// alternate's address). False when it was redirected once already (two relays naming each
    /// other must not bounce a client forever) or the new connection did not open (`failure`
    /// says why).
    package func redirect(to alternate: SocketAddress) -> Bool {
        guard !redirected else { return false }
        redirected = true
        if case .stream(let old) = link {
            let target = TurnConnector.Target(server: alternate, host: alternate.host, tls: old.context,
                                              inputCapacity: old.framer.capacity, outputCapacity: old.outputCapacity)
            switch TurnConnector(target: target).openOne() {
            case .success(let connection): link = .stream(connection)
            case .failure(let error):
                old.fail("following 300 Try Alternate: \(error.message)")
                return false
            }
        }
        server = alternate
        realm = nil
        nonce = nil
        key = nil
        offeredAlgorithms = nil
        algorithm = .md5
        return true
    }

    /// Learns REALM, NONCE and PASSWORD-ALGORITHMS from a 401 or 438 answer, so the request can
    /// be sent again signed. False when the answer carries no usable challenge.
    func learn(challenge: StunMessage) -> Bool {
        guard let newRealm = try? challenge.text(.realm), let newNonce = try? challenge.text(.nonce) else { return false }
        var offered: [UInt8]?
        var chosen = PasswordAlgorithm.md5
        if let slot = challenge.index.first(.passwordAlgorithms),
           let list = try? challenge.value(.passwordAlgorithms, AttributeValue.passwordAlgorithms) {
            offered = Array(challenge.bytes[slot.offset..<(slot.offset + slot.length)])
            // The strongest algorithm both sides know; a list without MD5 or SHA-256 is ignored.
            if list.contains(.sha256) { chosen = .sha256 } else if !list.contains(.md5) { offered = nil }
        }
        if newRealm != realm || chosen != algorithm || key == nil {
            key = LongTermKey.derive(username: username, realm: newRealm, password: password, algorithm: chosen)
        }
        realm = newRealm
        nonce = newNonce
        offeredAlgorithms = offered
        algorithm = chosen
        return true
    }
}
