@testable import TurnClientKit
import XCTest
@testable import LoadGen

final class TurnClientCredentialTests: XCTestCase {
    /// coturn's REST API: username EXPIRY:USER, password base64(HMAC-SHA1(secret, username));
    /// the expected password is openssl's: printf '%s' 1700000000:mediarelay-load |
    /// openssl dgst -binary -sha1 -hmac secret | base64
    func testRestCredentialIsCoturns() {
        let login = TurnCredential.secret("secret").login(validUntil: 1_700_000_000)
        XCTAssertEqual(login.username, "1700000000:mediarelay-load")
        XCTAssertEqual(login.password, "TYC1a2Uw48LvoZ2UrE5j1udyaAk=")
    }

    func testUserPasswordSplitsAtTheFirstColon() {
        XCTAssertEqual(TurnCredential(userPassword: "u:p:w"), .user(name: "u", password: "p:w"))
        XCTAssertEqual(TurnCredential(userPassword: "u:"), .user(name: "u", password: ""))
        XCTAssertNil(TurnCredential(userPassword: ":p"))
        XCTAssertNil(TurnCredential(userPassword: "u"))
    }
}
