import NetAddress
import XCTest

@testable import mediarelay

/// Where TURN credentials come from besides flags: the secret file and the environment
/// variable, the users file's errors, and an empty secret.
final class CredentialSourcesTests: XCTestCase {
    private let turn = ["--turn", "127.0.0.1:3478"]

    func testTheSecretFileGivesEverySecretLineAfterTheFlagsOnes() {
        let file = "# rotated 2026-11\n\n  new-secret  \r\nold-secret\n"
        let options = runOptions(turn + ["--turn-secret", "flag", "--turn-secret-file", "secrets"], files: ["secrets": file])
        XCTAssertEqual(options?.turnSecrets, ["flag", "new-secret", "old-secret"])
    }

    func testABadSecretLineIsNamedByItsNumberNeverItsText() {
        let error = refusal(turn + ["--turn-secret-file", "secrets"], files: ["secrets": "good\nbad secret\n"],
                            mentions: ["--turn-secret-file secrets", "line 2", "visible ASCII"])
        XCTAssertFalse(error?.description.contains("bad secret") ?? true)
        refusal(turn + ["--turn-secret-file", "secrets"], files: ["secrets": "# nothing yet\n"], mentions: ["holds no secret"])
        refusal(turn + ["--turn-secret-file", "missing"], mentions: ["--turn-secret-file missing", "cannot read it", "secrets, one a line"])
        refusal(["--turn-secret-file", "secrets"], files: ["secrets": "s\n"], mentions: ["--turn-secret-file", "without a TURN listener"])
    }

    func testTheEnvironmentGivesTheSecretOnlyWhenNothingElseDoes() {
        let environment = [ServerOptions.turnSecretEnvironmentVariable: "from-env"]
        XCTAssertEqual(runOptions(turn, environment: environment)?.turnSecrets, ["from-env"])
        XCTAssertEqual(runOptions(turn + ["--turn-secret", "flag"], environment: environment)?.turnSecrets, ["flag"])
        XCTAssertEqual(runOptions(turn + ["--turn-secret-file", "f"], environment: environment, files: ["f": "file\n"])?.turnSecrets, ["file"])
        // A host may set it for every service: a relay without TURN does not take it.
        XCTAssertEqual(runOptions([], environment: environment)?.turnSecrets, [])
        let bad = refusal(turn, environment: [ServerOptions.turnSecretEnvironmentVariable: "has space"],
                          mentions: [ServerOptions.turnSecretEnvironmentVariable, "visible ASCII"])
        XCTAssertFalse(bad?.description.contains("has space") ?? true)
    }

    /// An unset shell variable (`--turn-secret "$TURN_SECRET"`) was reported as "(value hidden):
    /// expected 1...1024 visible ASCII characters".
    func testAnEmptySecretIsCalledEmpty() {
        refusal(turn + ["--turn-secret", ""], mentions: ["mediarelay: --turn-secret: empty value (an unset variable?)"])
        refusal(["--config", "c.json"], files: ["c.json": #"{"turn": ["127.0.0.1:3478"], "turn_secret": [""]}"#],
                mentions: [#"key "turn_secret": empty value"#])
    }

    /// A missing users file was "expected a readable JSON file"; the file is NAME:PASSWORD text.
    func testAMissingUsersFileIsDescribedAsTheTextFileItIs() {
        let error = refusal(turn + ["--turn-users-file", "users.txt"], mentions: ["--turn-users-file users.txt", "NAME:PASSWORD lines"])
        XCTAssertFalse(error?.description.contains("JSON") ?? true, error?.description ?? "")
    }

    /// A name given twice was reported as "--turn-user", whichever place held it.
    func testADuplicateUserNamesTheFileAndItsLines() {
        refusal(turn + ["--turn-users-file", "users"], files: ["users": "alice:a\n# x\nbob:b\nalice:c\n"],
                mentions: ["--turn-users-file users", "line 4", #"user "alice" is on line 1 too"#])
        refusal(turn + ["--turn-user", "alice:a", "--turn-users-file", "users"], files: ["users": "bob:b\nalice:c\n"],
                mentions: ["--turn-users-file users", "line 2", "given by --turn-user too"])
        refusal(["--config", "c.json"], files: ["c.json": #"{"turn": ["127.0.0.1:3478"], "turn_user": ["alice:a"], "turn_users_file": "users"}"#,
                                                "users": "alice:c\n"],
                mentions: [#"config c.json: key "turn_users_file": users"#, "line 1", #"given by config c.json: key "turn_user" too"#])
    }
}
