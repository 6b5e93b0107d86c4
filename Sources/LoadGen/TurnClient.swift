import STUN

/// One TURN client of a load run: its own socket (the server knows an allocation by the
/// client's 5-tuple), its long-term credential state, and what the server granted.
///
/// Control path only, owned by the thread that runs the transactions (set-up, refresh and
/// release on the main thread); the sending and receiving threads share only its socket.
final class TurnClient {
    let socket: UDPSocket
    /// Where its requests and ChannelData go: the server it was given, or the alternate a 300
    /// named (`redirect`).
    private(set) var server: SocketAddress
    /// Whether a 300 Try Alternate moved it; it follows one redirect, never a second.
    private(set) var redirected = false
    let username: String
    let password: String
    private(set) var realm: String?
    private(set) var nonce: String?
    /// The long-term key, once the server's 401 has named the realm.
    private(set) var key: [UInt8]?
    /// PASSWORD-ALGORITHMS as the server offered it, echoed back (RFC 8489 section 9.2.4).
    private var offeredAlgorithms: [UInt8]?
    private var algorithm = PasswordAlgorithm.md5
    /// XOR-RELAYED-ADDRESS of the allocation, once allocated.
    var relayed: SocketAddress?
    /// The allocation's lifetime in seconds as the server granted it.
    var lifetime: UInt32 = 0

    init(socket: UDPSocket, server: SocketAddress, username: String, password: String) {
        self.socket = socket
        self.server = server
        self.username = username
        self.password = password
    }

    /// A request of `method` for this client: `attributes` appends the method's own, then the
    /// credentials (once known), MESSAGE-INTEGRITY and FINGERPRINT.
    func request(_ method: Method, _ attributes: (inout MessageBuilder) -> Void) -> MessageBuilder {
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
    /// first server's), as a browser does. False when it was redirected once already: two
    /// relays naming each other must not bounce a client forever.
    func redirect(to alternate: SocketAddress) -> Bool {
        guard !redirected else { return false }
        redirected = true
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
