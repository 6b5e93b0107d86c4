import DatagramEngine
import NetAddress
import STUN

/// Why a request was not authenticated; counted by reason in the stats.
public enum AuthFailure: Int, Error, Sendable, CaseIterable {
    /// No MESSAGE-INTEGRITY: the normal first request, answered 401 with a nonce.
    case challenged
    /// MESSAGE-INTEGRITY without USERNAME, REALM or NONCE (400).
    case missingAttributes
    /// A nonce that no key of ours (or the fleet's) issued, is for another client address, or
    /// has expired (438).
    case staleNonce
    case unknownUser
    /// A REST username past its expiry (401).
    case expired
    /// No key makes the MAC match (401).
    case badIntegrity
    /// PASSWORD-ALGORITHM(S) not as offered: a bid-down attempt or a broken client (400).
    case badAlgorithm
    /// An Allocate already accepted from another client 5-tuple (`AcceptedAllocates`): a
    /// replay, or a retransmission after the client's NAT moved it (438, with a fresh nonce).
    case replayed

    public var name: String {
        switch self {
        case .challenged: "challenged"
        case .missingAttributes: "missing_attributes"
        case .staleNonce: "stale_nonce"
        case .unknownUser: "unknown_user"
        case .expired: "expired"
        case .badIntegrity: "bad_integrity"
        case .badAlgorithm: "bad_algorithm"
        case .replayed: "replayed"
        }
    }

    /// The error code the request is answered with.
    public var code: ErrorCode {
        switch self {
        case .challenged, .unknownUser, .expired, .badIntegrity: .unauthenticated
        case .missingAttributes, .badAlgorithm: .badRequest
        case .staleNonce, .replayed: .staleNonce
        }
    }
}

/// An authenticated client: the key its responses are signed with, and with which attribute.
public struct TurnIdentity: Sendable, Equatable {
    public var username: String
    public var key: [UInt8]
    public var integrity: AttributeType
}

/// The long-term credential check of one request (RFC 8489 section 9.2.4, RFC 8656 section 6).
public struct TurnAuthenticator: Sendable {
    public let credentials: TurnCredentials
    public let nonces: NonceIssuer
    /// The algorithms offered in PASSWORD-ALGORITHMS, strongest first.
    static let offered: [UInt8] = [0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00]

    public init(credentials: TurnCredentials, nonces: NonceIssuer = NonceIssuer()) {
        self.credentials = credentials
        self.nonces = nonces
    }

    /// Checks `message` from `client`; `second` is the Unix second nonces are judged at,
    /// `unixTime` the one REST usernames expire by (the same clock, kept apart for tests).
    public func check(_ message: StunMessage, from client: Endpoint, second: UInt64,
                      unixTime: UInt64) -> Result<TurnIdentity, AuthFailure> {
        guard let integrity = message.integrityType else { return .failure(.challenged) }
        guard let username = try? message.text(.username), let nonce = try? message.text(.nonce),
              (try? message.text(.realm)) != nil else { return .failure(.missingAttributes) }
        guard nonces.check(nonce, for: client, at: second) == .valid else { return .failure(.staleNonce) }
        var algorithm = PasswordAlgorithm.md5
        if message.contains(.passwordAlgorithm) || message.contains(.passwordAlgorithms) {
            // Both or neither (RFC 8489 section 9.2.4), and the list must be the one offered.
            guard let chosen = try? message.value(.passwordAlgorithm, AttributeValue.passwordAlgorithm),
                  let slot = message.index.first(.passwordAlgorithms),
                  Array(message.bytes[slot.offset..<(slot.offset + slot.length)]) == TurnAuthenticator.offered
            else { return .failure(.badAlgorithm) }
            algorithm = chosen
        }
        switch credentials.keys(for: username, algorithm: algorithm, unixTime: unixTime) {
        case .failure(.expired): return .failure(.expired)
        case .failure(.unknownUser): return .failure(.unknownUser)
        case .success(let keys):
            for key in keys where message.integrity(key: key) == .valid {
                return .success(TurnIdentity(username: username, key: key, integrity: integrity))
            }
            return .failure(.badIntegrity)
        }
    }

    /// Adds what a 401 or 438 carries so the client can retry: REALM, a fresh NONCE and the
    /// PASSWORD-ALGORITHMS offered.
    public func appendChallenge(to builder: inout MessageBuilder, for client: Endpoint, second: UInt64) {
        appendRealmAndNonce(to: &builder, for: client, second: second)
        builder.append(.passwordAlgorithms, TurnAuthenticator.offered)
    }

    /// REALM and a fresh NONCE: what a 300 Try Alternate carries for the client to sign its
    /// Allocate to the alternate with (valid there when the fleet shares the nonce key).
    public func appendRealmAndNonce(to builder: inout MessageBuilder, for client: Endpoint, second: UInt64) {
        builder.append(.realm, text: credentials.realm)
        builder.append(.nonce, text: nonces.issue(for: client, at: second))
    }
}
