@testable import RelayCore
import NetAddress
import STUN
import XCTest

/// Nonces a fleet shares (`NonceIssuer.fleet`): what one relay issues, a sibling holding the same
/// secret verifies (and one holding another secret does not); a secret rotates relay by relay;
/// the issue time is the wall clock, judged with a little skew either way and across the 32-bit
/// wrap; and the 300 Try Alternate carries REALM and a nonce the sibling accepts.
final class FleetNonceTests: XCTestCase {
    let client = Endpoint(host: "198.51.100.7", port: 40_000)!
    let now: UInt64 = 1_700_000_000

    func testSiblingsWithOneSecretVerifyEachOthersNonces() {
        let first = NonceIssuer.fleet(secrets: [Array("fleet".utf8)])
        let sibling = NonceIssuer.fleet(secrets: [Array("fleet".utf8)])
        let stranger = NonceIssuer.fleet(secrets: [Array("other".utf8)])
        XCTAssertTrue(first.isShared)
        let nonce = first.issue(for: client, at: now)
        XCTAssertEqual(sibling.check(nonce, for: client, at: now + 5), .valid)
        XCTAssertEqual(stranger.check(nonce, for: client, at: now), .invalid, "another fleet's secret")
        XCTAssertEqual(NonceIssuer().check(nonce, for: client, at: now), .invalid, "a process key")
        XCTAssertEqual(sibling.check(nonce, for: Endpoint(host: "198.51.100.8", port: 40_000)!, at: now), .invalid,
                       "bound to the client's address on every relay")
        XCTAssertEqual(sibling.check(nonce, for: client, at: now + 600), .stale, "expired on the sibling too")
        XCTAssertFalse(NonceIssuer.fleet(secrets: []).isShared, "no secret: a key of this process")
        XCTAssertNotEqual(first.issue(for: client, at: now), NonceIssuer.fleet(secrets: [Array("other".utf8)]).issue(for: client, at: now))
    }

    func testASecretRotatesRelayByRelay() {
        let (old, new) = (Array("old".utf8), Array("new".utf8))
        let notYet = NonceIssuer.fleet(secrets: [old])
        let adding = NonceIssuer.fleet(secrets: [old, new])
        let switched = NonceIssuer.fleet(secrets: [new, old])
        let done = NonceIssuer.fleet(secrets: [new])
        // Every pair of neighbouring steps accepts each other's nonces.
        for (a, b) in [(notYet, adding), (adding, switched), (switched, done)] {
            XCTAssertEqual(a.check(b.issue(for: client, at: now), for: client, at: now), .valid)
            XCTAssertEqual(b.check(a.issue(for: client, at: now), for: client, at: now), .valid)
        }
        XCTAssertEqual(done.check(notYet.issue(for: client, at: now), for: client, at: now), .invalid)
    }

    func testTheWallClockWithSkewAndAcrossTheWrap() {
        let nonces = NonceIssuer.fleet(secrets: [Array("fleet".utf8)], lifetime: 600, skew: 30)
        // A sibling whose clock runs ahead issued it "in the future".
        XCTAssertEqual(nonces.check(nonces.issue(for: client, at: now + 30), for: client, at: now), .valid)
        XCTAssertEqual(nonces.check(nonces.issue(for: client, at: now + 31), for: client, at: now), .stale)
        XCTAssertEqual(nonces.check(nonces.issue(for: client, at: now), for: client, at: now + 599), .valid)
        // The nonce carries 32 bits of the second: judged across the wrap (year 2106).
        let wrap: UInt64 = 1 << 32
        XCTAssertEqual(nonces.check(nonces.issue(for: client, at: wrap - 10), for: client, at: wrap + 10), .valid)
        XCTAssertEqual(nonces.check(nonces.issue(for: client, at: wrap - 10), for: client, at: wrap + 590), .stale)
    }

    func testARedirectCarriesRealmAndANonceTheSiblingAccepts() throws {
        let secret = Array("fleet".utf8)
        let harness = try TurnHarness { settings in
            settings.authenticator = TurnAuthenticator(credentials: settings.authenticator.credentials, nonces: .fleet(secrets: [secret]))
            settings.maxAllocations = 1
            settings.alternates = TurnAlternates(plain: [Endpoint(host: "127.0.0.2", port: 3478)!])
        }
        var resident = try TurnTestClient(harness)
        XCTAssertTrue(try XCTUnwrap(resident.allocate()).isSuccess)
        var moved = try TurnTestClient(harness)
        (moved.username, moved.password) = ("bob", "hunter2")
        let redirect = try XCTUnwrap(moved.allocate())
        XCTAssertEqual(redirect.errorCode, 300)
        XCTAssertEqual(try redirect.text(.realm), TurnHarness.realm)
        let nonce = try XCTUnwrap(try redirect.text(.nonce))
        let sibling = NonceIssuer.fleet(secrets: [secret])
        let second = harness.wall.seconds.withLock { $0 }
        XCTAssertEqual(sibling.check(nonce, for: moved.address, at: second), .valid)
        XCTAssertEqual(redirect.integrity(key: moved.key), .valid, "signed, REALM and NONCE under the integrity")
    }
}
