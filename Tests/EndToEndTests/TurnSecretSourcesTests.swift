import Foundation
import Glibc
import NetAddress
import STUN
import XCTest

/// REST secrets from outside the command line, through the real executable: from
/// MEDIARELAY_TURN_SECRET (out of `ps`'s sight), from --turn-secret-file (several, for
/// rotation), and what SIGHUP says of a changed file.
final class TurnSecretSourcesTests: XCTestCase {
    private func allocates(_ fixture: TurnRelayFixture, secret: String) throws -> Bool {
        let credential = TurnRelayFixture.restCredential("dave", seconds: 3600, secret: secret)
        let client = try fixture.client(username: credential.username, password: credential.password)
        return try client.ask(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }.messageClass == .successResponse
    }

    func testTheEnvironmentGivesTheSecretAndTheCommandLineDoesNotShowIt() throws {
        let secret = "env-secret-\(UUID().uuidString)"
        let fixture = try TurnRelayFixture([], environment: ["MEDIARELAY_TURN_SECRET": secret], credentials: false)
        defer { XCTAssertEqual(fixture.relay.stop(), 0) }
        XCTAssertTrue(try allocates(fixture, secret: secret))
        XCTAssertFalse(try allocates(fixture, secret: "another"))
        let commandLine = try String(contentsOfFile: "/proc/\(fixture.relay.process.processIdentifier)/cmdline", encoding: .utf8)
        XCTAssertFalse(commandLine.contains(secret), "ps would show it")
    }

    func testEverySecretOfTheFileIsAcceptedSoOneCanBeRotatedIn() throws {
        let config = try ConfigFixture(self, "{}")
        let file = config.directory.appendingPathComponent("secrets").path
        try Data("# the new one first, the old one until every client has moved\nnew-secret\n\n  old-secret\n".utf8)
            .write(to: URL(fileURLWithPath: file))
        let fixture = try TurnRelayFixture(["--turn-secret-file", file], credentials: false)
        defer { XCTAssertEqual(fixture.relay.stop(), 0) }
        XCTAssertTrue(try allocates(fixture, secret: "new-secret"))
        XCTAssertTrue(try allocates(fixture, secret: "old-secret"))
        XCTAssertFalse(try allocates(fixture, secret: "# the new one first, the old one until every client has moved"))
    }

    /// The TURN server reads its secrets once; a SIGHUP after the file changed says that the
    /// change waits for a restart, and the running secrets stay as they were. The config names
    /// the file relative to itself.
    func testASighupSaysThatAChangedSecretFileWaitsForARestart() throws {
        let config = try ConfigFixture(self, #"{"turn_secret_file": "secrets.txt"}"#)
        let file = URL(fileURLWithPath: config.directory.appendingPathComponent("secrets.txt").path)
        try Data("first\n".utf8).write(to: file)
        let fixture = try TurnRelayFixture(["--config", config.path], credentials: false)
        defer { XCTAssertEqual(fixture.relay.stop(), 0) }
        XCTAssertTrue(try allocates(fixture, secret: "first"))
        try Data("second\nfirst\n".utf8).write(to: file, options: .atomic)
        kill(fixture.relay.process.processIdentifier, SIGHUP)
        let waits = "needs a restart to take effect: turn_secret (changed) (the TURN server reads its REST secrets at start)"
        XCTAssertTrue(eventually { fixture.relay.log.contains(waits) }, fixture.relay.log)
        XCTAssertFalse(fixture.relay.log.contains("second"), "a secret is never logged")
        XCTAssertTrue(try allocates(fixture, secret: "first"))
        XCTAssertFalse(try allocates(fixture, secret: "second"), "the new secret waits for a restart, as the line says")
    }
}
