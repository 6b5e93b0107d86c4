import DatagramEngine
@testable import RelayCore
import NetAddress
import STUN
import XCTest

/// Long-term credentials: static users, coturn-compatible REST credentials (expired, wrong,
/// rotated), expiring stateless nonces, and the request check that ties them together.
final class TurnCredentialTests: XCTestCase {
    let client = Endpoint(host: "192.0.2.10", port: 5000)!
    let realm = "example.org"

    func testRESTPasswordMatchesCoturnsFormula() {
        // Computed outside this code base: Python's hmac + base64 over the same inputs.
        XCTAssertEqual(TurnCredentials.restPassword(secret: "north-secret", username: "1700000000:alice"),
                       "g+jb180fcj+xlpA/2mP60OdIgU0=")
    }

    func testRESTUsernamesExpiryForms() {
        let credentials = TurnCredentials(realm: realm, secrets: ["s"])
        XCTAssertEqual(credentials.restExpiry(of: "1700000000:alice"), 1_700_000_000)
        XCTAssertEqual(credentials.restExpiry(of: "alice:1700000000"), 1_700_000_000)
        XCTAssertEqual(credentials.restExpiry(of: "1700000000"), 1_700_000_000)
        XCTAssertNil(credentials.restExpiry(of: "alice"))
        XCTAssertNil(credentials.restExpiry(of: "alice:bob"))
    }

    func testRESTCredentialsExpiredWrongAndRotated() throws {
        let username = "1700000000:alice"
        let oldPassword = TurnCredentials.restPassword(secret: "old", username: username)
        let rotating = authenticator(secrets: ["new", "old"])
        let before: UInt64 = 1_699_999_999
        XCTAssertEqual(try check(rotating, username, oldPassword, unixTime: before).get().username, username)
        XCTAssertEqual(check(rotating, username, oldPassword, unixTime: 1_700_000_000), .failure(.expired))
        XCTAssertEqual(check(rotating, username, "wrong", unixTime: before), .failure(.badIntegrity))
        let rotatedOut = authenticator(secrets: ["new"])
        XCTAssertEqual(check(rotatedOut, username, oldPassword, unixTime: before), .failure(.badIntegrity))
        let noSecrets = authenticator(secrets: [])
        XCTAssertEqual(check(noSecrets, username, oldPassword, unixTime: before), .failure(.unknownUser))
    }

    func testStaticUsersWithBothAlgorithms() throws {
        let auth = TurnAuthenticator(credentials: TurnCredentials(realm: realm, users: [("bob", "pw")]))
        XCTAssertEqual(try check(auth, "bob", "pw", unixTime: 0).get().integrity, .messageIntegrity)
        XCTAssertEqual(try check(auth, "bob", "pw", unixTime: 0, algorithm: .sha256).get().integrity,
                       .messageIntegritySHA256)
        XCTAssertEqual(check(auth, "bob", "nope", unixTime: 0), .failure(.badIntegrity))
        XCTAssertEqual(check(auth, "carol", "pw", unixTime: 0), .failure(.unknownUser))
    }

    func testNoncesExpireAndAreBoundToTheClient() {
        let nonces = NonceIssuer(lifetime: 600)
        let nonce = nonces.issue(for: client, at: 1000)
        XCTAssertTrue(nonce.hasPrefix("obMatJos2"))
        XCTAssertEqual(nonces.check(nonce, for: client, at: 1000), .valid)
        XCTAssertEqual(nonces.check(nonce, for: client, at: 1599), .valid)
        XCTAssertEqual(nonces.check(nonce, for: client, at: 1600), .stale)
        XCTAssertEqual(nonces.check(nonce, for: Endpoint(host: "192.0.2.11", port: 5000)!, at: 1000), .invalid, "another address")
        XCTAssertEqual(nonces.check(nonce, for: Endpoint(host: "192.0.2.10", port: 5001)!, at: 1000), .valid,
                       "the same address on another port (a new connection, a NAT's mapping towards a sibling)")
        XCTAssertEqual(NonceIssuer().check(nonce, for: client, at: 1000), .invalid, "another process's key")
        var tampered = Array(nonce.utf8)
        tampered[tampered.count - 1] ^= 1
        XCTAssertEqual(nonces.check(String(decoding: tampered, as: UTF8.self), for: client, at: 1000), .invalid)
        XCTAssertEqual(nonces.check("short", for: client, at: 1000), .invalid)
    }

    func testRequestsLackingCredentials() throws {
        let auth = TurnAuthenticator(credentials: TurnCredentials(realm: realm, users: [("bob", "pw")]))
        let bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random()).message
        XCTAssertEqual(auth.check(bare, from: client, second: 0, unixTime: 0), .failure(.challenged))
        var noNonce = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        noNonce.append(.username, text: "bob")
        noNonce.append(.realm, text: realm)
        noNonce.appendIntegrity(key: [1])
        XCTAssertEqual(auth.check(noNonce.message, from: client, second: 0, unixTime: 0), .failure(.missingAttributes))
        XCTAssertEqual(check(auth, "bob", "pw", unixTime: 0, nonceSecond: 0, second: 10_000), .failure(.staleNonce))
        XCTAssertEqual(check(auth, "bob", "pw", unixTime: 0, algorithms: [0, 2, 0, 0]), .failure(.badAlgorithm),
                       "a PASSWORD-ALGORITHMS list other than the one offered (bid-down)")
    }

    // MARK: helpers

    private func authenticator(secrets: [String]) -> TurnAuthenticator {
        TurnAuthenticator(credentials: TurnCredentials(realm: realm, secrets: secrets))
    }

    /// Builds a request signed as a client would after a 401, and checks it.
    private func check(_ auth: TurnAuthenticator, _ username: String, _ password: String, unixTime: UInt64,
                       algorithm: PasswordAlgorithm = .md5, algorithms: [UInt8]? = nil,
                       nonceSecond: UInt64 = 50, second: UInt64 = 60) -> Result<TurnIdentity, AuthFailure> {
        var builder = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        builder.append(.requestedTransport, [17, 0, 0, 0])
        builder.append(.username, text: username)
        builder.append(.realm, text: realm)
        builder.append(.nonce, text: auth.nonces.issue(for: client, at: nonceSecond))
        if algorithm == .sha256 || algorithms != nil {
            builder.append(.passwordAlgorithms, algorithms ?? [0, 2, 0, 0, 0, 1, 0, 0])
            builder.append(.passwordAlgorithm, [0, UInt8(algorithm.rawValue), 0, 0])
        }
        let key = LongTermKey.derive(username: username, realm: realm, password: password, algorithm: algorithm)
        builder.appendIntegrity(algorithm == .md5 ? .messageIntegrity : .messageIntegritySHA256, key: key)
        builder.appendFingerprint()
        return auth.check(builder.message, from: client, second: second, unixTime: unixTime)
    }
}
