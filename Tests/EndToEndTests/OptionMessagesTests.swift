import Foundation
import TestPorts
import TestSupport
import XCTest

/// What the executable says about options an operator got wrong, and what --help says they do:
/// each case once said something else (in the comment above it).
final class OptionMessagesTests: XCTestCase {
    private func assertStops(_ arguments: [String], _ mentions: [String], absent: [String] = [],
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let (status, stderr) = try RelayProcess.runToExit(["--http", "127.0.0.1:0"] + arguments, file: file, line: line)
        XCTAssertEqual(status, 2, stderr, file: file, line: line)
        XCTAssertEqual(stderr.split(separator: "\n").count, 1, stderr, file: file, line: line)
        for text in mentions { XCTAssertTrue(stderr.contains(text), "\(stderr) does not say \(text)", file: file, line: line) }
        for text in absent { XCTAssertFalse(stderr.contains(text), "\(stderr) says \(text)", file: file, line: line) }
    }

    /// "expected a readable JSON file", for a file of NAME:PASSWORD lines.
    func testAMissingUsersFileIsCalledATextFile() throws {
        let config = try ConfigFixture(self, "{}")
        let missing = config.directory.appendingPathComponent("users.txt").path
        try assertStops(["--turn", "127.0.0.1:3478", "--turn-users-file", missing],
                        ["--turn-users-file \(missing): cannot read it", "expected a readable text file of NAME:PASSWORD lines"],
                        absent: ["JSON"])
    }

    /// "--turn-user: user "alice" is given twice", whichever place held the second.
    func testADuplicateUserNamesTheFileAndLine() throws {
        let config = try ConfigFixture(self, "{}")
        let users = config.directory.appendingPathComponent("users.txt")
        try Data("bob:1\nalice:2\n".utf8).write(to: users)
        try assertStops(["--turn", "127.0.0.1:3478", "--turn-user", "alice:0", "--turn-users-file", users.path],
                        ["--turn-users-file \(users.path): line 2: user \"alice\" is given by --turn-user too"])
    }

    /// "--turn-secret (value hidden): expected 1...1024 visible ASCII characters" for an unset variable.
    func testAnEmptySecretIsCalledEmpty() throws {
        try assertStops(["--turn", "127.0.0.1:3478", "--turn-secret", ""], ["mediarelay: --turn-secret: empty value (an unset variable?)"])
    }

    /// All 55 keys on one line, and no guess.
    func testAnUnknownConfigKeyGetsAGuess() throws {
        let config = try ConfigFixture(self, #"{"relay-address": "127.0.0.1"}"#)
        try assertStops(["--config", config.path], [#"key "relay-address": unknown key; did you mean "relay_address"?"#],
                        absent: ["idle_timeout_seconds"])
    }

    /// A value from the file was named by a flag the operator never typed.
    func testAnErrorAboutAValueFromTheConfigNamesTheKey() throws {
        let config = try ConfigFixture(self, #"{"turn": ["0.0.0.0:3478"], "turn_user": ["a:b"]}"#)
        try assertStops(["--config", config.path], [#"config \#(config.path): key "turn": 0.0.0.0:3478: other hosts reach"#],
                        absent: ["--turn 0.0.0.0"])
    }

    /// A relative path in the file was the working directory's, so a config that named its
    /// users file beside it ran only when started from its own directory.
    func testARelativePathInTheConfigIsBesideIt() throws {
        let config = try ConfigFixture(self, #"{"turn_users_file": "users.txt", "turn_realm": "beside.test"}"#)
        try Data("alice:secret\n".utf8).write(to: config.directory.appendingPathComponent("users.txt"))
        XCTAssertNotEqual(FileManager.default.currentDirectoryPath, config.directory.path)
        let fixture = try TurnRelayFixture(["--config", config.path], credentials: false)
        defer { XCTAssertEqual(fixture.relay.stop(), 0) }
        XCTAssertNoThrow(try fixture.client().allocate(), fixture.relay.log)
    }

    /// --turn-bandwidth's excess was "counted and dropped" (docs/ecn.md: marked CE first);
    /// --relay-address and --ports did not say TURN uses them; --ready-threshold left out the
    /// TCP and TLS connections /readyz counts.
    func testHelpSaysWhatTheOptionsDo() throws {
        let (status, help) = try Command.run(BuiltProducts.path("mediarelay"), ["--help"])
        XCTAssertEqual(status, 0, help)
        let paragraphs = help.components(separatedBy: "\n  --")
        func says(_ flag: String, _ text: String, file: StaticString = #filePath, line: UInt = #line) {
            let paragraph = paragraphs.first { $0.hasPrefix(flag + " ") } ?? ""
            XCTAssertTrue(paragraph.contains(text), "--\(flag): \(paragraph)", file: file, line: line)
        }
        says("turn-bandwidth", "ECT datagrams are marked CE")
        says("relay-address", "TURN relayed sockets bind")
        says("ports", "TURN relayed addresses")
        says("ready-threshold", "TURN connections over TCP and TLS")
        says("turn-secret", "prefer --turn-secret-file or MEDIARELAY_TURN_SECRET")
        says("free-bind", "IP_FREEBIND")
    }
}
