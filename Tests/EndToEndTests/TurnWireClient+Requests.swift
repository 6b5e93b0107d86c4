@testable import ClientSockets
import TurnClientKit
import NetAddress
import STUN

/// `TurnWireClient`'s requests: each written and signed here with long-term credentials, and
/// the 401/438 round that teaches it the realm and nonce.
extension TurnWireClient {
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
        let answer = try exchange(bare.bytes, seconds: 5)
        guard answer.errorCode?.code == 401, let fresh = try? answer.text(.nonce), let named = try? answer.text(.realm) else {
            throw LoadError("a bare Allocate was answered \(answer.type) \(answer.errorCode.map { "\($0.code)" } ?? "")")
        }
        nonce = fresh
        realm = named
    }

    /// Sends a signed request; on 401 or 438 learns the realm and nonce and sends it once more.
    func ask(_ method: Method, _ attributes: (inout MessageBuilder) -> Void = { _ in }) throws -> StunMessage {
        for _ in 0..<2 {
            let answer = try exchange(signed(method, attributes), seconds: 5)
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
}
