import Foundation
import Glibc
import NetAddress
import STUN
import XCTest

/// Failed TURN authentications through the real executable: one log line each in both
/// `--log-format`s, with the client's address and port, transport, user name and realm as
/// sent, and the reason; a first request without credentials (the 401 challenge) writes none;
/// a flood from one address is held to its burst.
final class TurnAuthenticationLogTests: XCTestCase {
    static let message = "TURN authentication failed"

    private func allocate(_ client: TurnWireClient) throws -> StunMessage {
        try client.exchange(client.signed(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) })
    }

    func testEachReasonIsOneLineWithWhatTheClientSentInBothFormats() throws {
        for format in ["text", "json"] {
            let fixture = try TurnRelayFixture(["--log-format", format])
            defer { XCTAssertEqual(fixture.relay.stop(), 0) }
            // Four sources, so each line is its source's first.
            let wrongPassword = try fixture.client(host: "127.0.0.2", password: "wrong")
            XCTAssertEqual(try allocate(wrongPassword).errorCode?.code, 401)
            let stranger = try fixture.client(host: "127.0.0.3", username: "mallory")
            stranger.realm = "other realm"
            XCTAssertEqual(try allocate(stranger).errorCode?.code, 401)
            let old = TurnRelayFixture.restCredential("carol", seconds: -60)
            let expired = try fixture.client(host: "127.0.0.4", username: old.username, password: old.password)
            XCTAssertEqual(try allocate(expired).errorCode?.code, 401)
            let stale = try fixture.client(host: "127.0.0.5")
            stale.nonce = "not-a-nonce-of-this-relay"
            XCTAssertEqual(try allocate(stale).errorCode?.code, 438)

            let expected: [(TurnWireClient, String, String, String, String)] = [
                (wrongPassword, TurnRelayFixture.user, TurnRelayFixture.realm, "bad_integrity", "warning"),
                (stranger, "mallory", "other realm", "unknown_user", "warning"),
                (expired, old.username, TurnRelayFixture.realm, "expired", "warning"),
                (stale, TurnRelayFixture.user, TurnRelayFixture.realm, "stale_nonce", "info"),
            ]
            for (client, user, realm, reason, level) in expected {
                let address = client.socket.localAddress
                let line = LogLines.wait(fixture.relay, message: Self.message) { $0["reason"] == reason }
                XCTAssertEqual(line, ["msg": Self.message, "level": level, "client": address.host, "port": "\(address.port)",
                                      "transport": "udp", "user": user, "realm": realm, "reason": reason, "suppressed": "0"]
                                   .merging(format == "json" ? ["time": line?["time"] ?? "no time"] : [:]) { $1 },
                               "\(format): \(reason)")
            }
            // The challenges each client met first wrote nothing.
            XCTAssertEqual(LogLines.all(in: fixture.relay.log, message: Self.message).count, 4, fixture.relay.log)
        }
    }

    func testAFloodFromOneAddressIsHeldToItsBurst() throws {
        let fixture = try TurnRelayFixture([])
        defer { XCTAssertEqual(fixture.relay.stop(), 0) }
        let client = try fixture.client(password: "guess")
        for _ in 0..<12 { XCTAssertEqual(try allocate(client).errorCode?.code, 401) }
        // Every failure is counted; the log holds the burst (the next line, 12 s on, would carry
        // the count held back: TurnNoticeLimitTests).
        let stats = try fixture.relay.waitFor { RelayProcess.number($0, "turn", "auth_failures", "bad_integrity") == 12 }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "auth_failures", "bad_integrity"), 12, "\(stats)")
        XCTAssertEqual(LogLines.all(in: fixture.relay.log, message: Self.message).count, 5, fixture.relay.log)
    }
}
