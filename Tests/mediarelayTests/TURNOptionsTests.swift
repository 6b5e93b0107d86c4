import NetAddress
import RelayCore
import XCTest

@testable import mediarelay

/// The TURN options: each flag's good and bad values, lists, the users file, and the checks
/// that need several options (credentials, duplicates, settings without a listener).
final class TURNOptionsTests: XCTestCase {
    /// A listener and a user, so each case below passes the cross-option checks.
    let base = ["--turn", "127.0.0.1:3478", "--turn-user", "base:pw"]

    func testTURNIsOffByDefault() {
        guard let options = runOptions([]) else { return }
        XCTAssertEqual(options.turnListeners, [])
        XCTAssertEqual(options.turnRealm, "mediarelay")
        XCTAssertEqual(options.turnUsers, [])
        XCTAssertNil(options.turnUsersFile)
        XCTAssertEqual(options.turnSecrets, [])
        XCTAssertEqual(options.turnAllowedPeers, [])
        XCTAssertEqual(options.turnDeniedPeers, [])
        XCTAssertEqual(options.turnMaxAllocations, 10000)
        XCTAssertEqual(options.turnMaxAllocationsPerUser, 0)
        XCTAssertEqual(options.turnBandwidth, 0)
        XCTAssertEqual(options.turnPortShare, 50)
        XCTAssertEqual(options.turnPortLimit, 500)
        XCTAssertEqual(options.turnMaxChannels, 256)
        XCTAssertEqual(options.turnUnauthenticatedRate, 10)
    }

    func testEveryTURNOptionAcceptsAGoodValueInBothSpellings() {
        let good: [(String, String, (ServerOptions) -> Bool)] = [
            ("--turn", "[::1]:3479", { $0.turnListeners == [HostPort(host: "127.0.0.1", port: 3478), HostPort(host: "::1", port: 3479)] }),
            ("--turn-realm", "example.org", { $0.turnRealm == "example.org" }),
            ("--turn-realm", "Grüße aus Köln", { $0.turnRealm == "Grüße aus Köln" }),
            ("--turn-user", "bob:pa:ss word", { $0.turnUsers.last == TURNUser(name: "bob", password: "pa:ss word") }),
            ("--turn-users-file", "users.txt", { $0.turnUsersFile == "users.txt" && $0.turnUsers.last?.name == "carol" }),
            ("--turn-secret", "north-wind-42", { $0.turnSecrets == ["north-wind-42"] }),
            ("--turn-secret-file", "secrets.txt", { $0.turnSecretFile == "secrets.txt" && $0.turnSecrets.last == "from-file" }),
            ("--turn-allowed-peer", "127.0.0.0/8", { $0.turnAllowedPeers.map(\.text) == ["127.0.0.0/8"] }),
            ("--turn-denied-peer", "2001:db8::/32", { $0.turnDeniedPeers.map(\.text) == ["2001:db8::/32"] }),
            ("--turn-max-allocations", "1000000", { $0.turnMaxAllocations == 1_000_000 }),
            ("--turn-max-allocations-per-user", "0", { $0.turnMaxAllocationsPerUser == 0 }),
            ("--turn-max-allocations-per-user", "12", { $0.turnMaxAllocationsPerUser == 12 }),
            ("--turn-bandwidth", "1000000000", { $0.turnBandwidth == 1_000_000_000 }),
            ("--turn-port-share", "100", { $0.turnPortShare == 100 && $0.turnPortLimit == 1000 }),
            ("--turn-max-channels", "1", { $0.turnLimits.maxChannels == 1 }),
            ("--turn-max-channels", "16384", { $0.turnLimits.maxChannels == 16_384 }),
            ("--turn-unauthenticated-rate", "0", { $0.turnLimits.unauthenticatedRate == 0 }),
            ("--turn-unauthenticated-rate", "100000", { $0.turnLimits.unauthenticatedRate == 100_000 }),
            ("--turn-alternate", "127.0.0.2:3478", { $0.turnAlternatesInForce == TurnAlternates(plain: [Endpoint(host: "127.0.0.2", port: 3478)!]) }),
            ("--turn-alternate", "tls:[2001:db8::2]:5349", { $0.turnAlternatesInForce.tls == [Endpoint(host: "2001:db8::2", port: 5349)!] }),
            ("--turn-alternate-domain", "turn.example.org", { $0.turnAlternateDomain == "turn.example.org" }),
            ("--turn-nonce-secret", "fleet-nonce", { $0.turnNonceSecrets == ["fleet-nonce"] }),
        ]
        for (flag, value, check) in good {
            for arguments in [base + [flag, value], base + ["\(flag)=\(value)"]] {
                guard let options = runOptions(arguments, files: ["users.txt": "carol:pw\n", "secrets.txt": "from-file\n"]) else { continue }
                XCTAssertTrue(check(options), "\(arguments) did not take effect")
            }
        }
        XCTAssertEqual(Set(good.map(\.0)), Set(OptionKey.allCases.map(\.flag).filter { $0.hasPrefix("--turn") && !streamTURNFlags.contains($0) }),
                       "a TURN flag has no good-value case (TURN over TCP and TLS: TURNStreamOptionsTests)")
    }

    func testEveryTURNOptionRefusesABadValueWithOneLineNamingIt() {
        let bad: [(String, String, String)] = [
            ("--turn", "localhost:3478", "IP literal"),
            ("--turn", "127.0.0.1:0", "PORT in 1...65535"),
            ("--turn", "::1:3478", "[IPV6]:PORT"),
            ("--turn", "127.0.0.1", "HOST:PORT"),
            ("--turn-realm", "", "1 to 127 characters"),
            ("--turn-realm", String(repeating: "r", count: 128), "1 to 127 characters"),
            ("--turn-realm", "a\"b", "double quotes"),
            ("--turn-realm", "tab\there", "control characters"),
            ("--turn-allowed-peer", "10.0.0.1/8", "did you mean 10.0.0.0/8?"),
            ("--turn-allowed-peer", "10.0.0.0/33", "not an integer in 0...32"),
            ("--turn-denied-peer", "fe80::/129", "not an integer in 0...128"),
            ("--turn-denied-peer", "example.com/8", "not an IPv4 or IPv6 literal"),
            ("--turn-max-allocations", "0", "1...1000000"),
            ("--turn-max-allocations-per-user", "-1", "0...1000000"),
            ("--turn-bandwidth", "1e6", "0...1000000000"),
            ("--turn-bandwidth", "1000000001", "0...1000000000"),
            ("--turn-port-share", "0", "1...100"),
            ("--turn-port-share", "101", "1...100"),
            ("--turn-max-channels", "0", "1...16384"),
            ("--turn-max-channels", "16385", "1...16384"),
            ("--turn-max-channels", "many", "1...16384"),
            ("--turn-unauthenticated-rate", "-1", "0...100000"),
            ("--turn-unauthenticated-rate", "100001", "0...100000"),
            ("--turn-unauthenticated-rate", "10/s", "0...100000"),
            ("--turn-alternate", "relay2.example.org:3478", "IP literal"),
            ("--turn-alternate", "0.0.0.0:3478", "a wildcard names no server"),
            ("--turn-alternate", "udp:127.0.0.2:3478", "tls:HOST:PORT"),
            ("--turn-alternate", "tls:127.0.0.2", "tls:HOST:PORT"),
            ("--turn-alternate-domain", "-turn.example.org", "a DNS name"),
            ("--turn-alternate-domain", "turn..example.org", "a DNS name"),
            ("--turn-alternate-domain", "turn example.org", "a DNS name"),
        ]
        for (flag, value, expected) in bad {
            // An empty value is named as empty, after the flag alone.
            let shown = value.isEmpty ? "\(flag): empty value" : OptionError.oneLine("\(flag) \(OptionError.quoted(value)):")
            refusal(base + [flag, value], mentions: [shown, expected])
            refusal(base + ["\(flag)=\(value)"], mentions: [shown, expected])
        }
        // Secrets and passwords are refused without echoing them.
        for (flag, value) in [("--turn-user", "nopassword"), ("--turn-user", ":pw"), ("--turn-user", "name:"),
                              ("--turn-user", "na\u{7}me:pw"), ("--turn-user", "n:\u{1b}[2Jpw"),
                              ("--turn-user", String(repeating: "n", count: 509) + ":pw"),
                              ("--turn-secret", "two words"), ("--turn-secret", "tab\tsecret"),
                              ("--turn-secret", String(repeating: "s", count: 1025)),
                              ("--turn-nonce-secret", "two words")] {
            let error = refusal(base + [flag, value], mentions: ["\(flag) (value hidden):", "expected"])
            XCTAssertFalse(error?.description.contains(value) ?? true, value)
        }
        // An empty value (an unset variable) is called empty, and nothing is echoed.
        refusal(base + ["--turn-nonce-secret", ""], mentions: ["--turn-nonce-secret: empty value", "visible ASCII"])
        refusal(base + ["--turn-users-file", ""], mentions: ["--turn-users-file: empty value", "a readable text file"])
        refusal(base + ["--turn-secret-file", ""], mentions: ["--turn-secret-file: empty value", "a readable text file"])
        let checked = Set(bad.map(\.0)).union(["--turn-user", "--turn-secret", "--turn-nonce-secret", "--turn-users-file", "--turn-secret-file"])
        XCTAssertEqual(checked, Set(OptionKey.allCases.map(\.flag).filter { $0.hasPrefix("--turn") && !streamTURNFlags.contains($0) }),
                       "a TURN flag has no bad-value case (TURN over TCP and TLS: TURNStreamOptionsTests)")
    }

    func testTheReloadableQuotasAreCheckedInTheConfigFileToo() {
        let listener = #""turn": ["127.0.0.1:3478"], "turn_user": ["a:b"]"#
        refusal(["--config", "c.json"], files: ["c.json": "{\(listener), \"turn_max_channels\": 0}"],
                mentions: [#"config c.json: key "turn_max_channels": 0:"#, "1...16384"])
        refusal(["--config", "c.json"], files: ["c.json": "{\(listener), \"turn_max_channels\": \"4\"}"],
                mentions: [#"key "turn_max_channels""#, "expected an integer"])
        refusal(["--config", "c.json"], files: ["c.json": "{\(listener), \"turn_unauthenticated_rate\": 2.5}"],
                mentions: [#"key "turn_unauthenticated_rate""#, "expected an integer", "0...100000"])
        let good = runOptions(["--config", "c.json", "--turn-max-channels", "8"],
                              files: ["c.json": "{\(listener), \"turn_max_channels\": 4, \"turn_unauthenticated_rate\": 3}"])
        XCTAssertEqual(good?.turnLimits, TurnLimits(maxChannels: 8, unauthenticatedRate: 3), "the flag wins over the file")
    }

    func testListsRepeatAndFlagsReplaceTheFilesList() {
        guard let options = runOptions([
            "--turn", "127.0.0.1:3478", "--turn=[::]:3478", "--turn-secret", "new", "--turn-secret=old", "--advertise-address", "203.0.113.1",
            "--turn-allowed-peer", "127.0.0.0/8", "--turn-allowed-peer", "::1",
            "--turn-denied-peer", "127.0.0.2", "--turn-denied-peer", "10.0.0.0/8",
        ]) else { return }
        XCTAssertEqual(options.turnListeners.map(\.description), ["127.0.0.1:3478", "[::]:3478"])
        XCTAssertEqual(options.turnSecrets, ["new", "old"])
        XCTAssertEqual(options.turnAllowedPeers.map(\.text), ["127.0.0.0/8", "::1"])
        XCTAssertEqual(options.turnDeniedPeers.map(\.text), ["127.0.0.2", "10.0.0.0/8"])
        refusal(base + ["--turn-realm", "a", "--turn-realm", "b"], mentions: ["--turn-realm", "more than once", "--turn-user"])

        let file = #"{"turn": ["127.0.0.1:3478"], "turn_secret": ["file-secret"], "turn_user": ["file:pw"]}"#
        guard let merged = runOptions(["--config", "c.json", "--turn-secret", "flag-secret"], files: ["c.json": file]) else { return }
        XCTAssertEqual(merged.turnSecrets, ["flag-secret"], "flags replace the file's list")
        XCTAssertEqual(merged.turnUsers, [TURNUser(name: "file", password: "pw")], "lists without a flag come from the file")

        let secrets = (0..<17).flatMap { ["--turn-secret", "s\($0)"] }
        refusal(base + secrets, mentions: ["--turn-secret", "at most 16"])
        let listeners = (0..<65).map { "\"127.0.0.1:\(3000 + $0)\"" }.joined(separator: ",")
        refusal(["--config", "c.json"], files: ["c.json": "{\"turn\": [\(listeners)], \"turn_secret\": [\"s\"]}"],
                mentions: [#"key "turn""#, "at most 64"])
    }

    func testTheUsersFile() {
        let text = "# users\r\n\r\n  alice:secret one  \r\n\tbob:b:c\n   # indented comment\ncarol:x"
        guard let options = runOptions(["--turn", "127.0.0.1:3478", "--turn-users-file", "u.txt"], files: ["u.txt": text]) else { return }
        XCTAssertEqual(options.turnUsers, [TURNUser(name: "alice", password: "secret one"), TURNUser(name: "bob", password: "b:c"),
                                           TURNUser(name: "carol", password: "x")])
        let flagged = runOptions(["--turn", "127.0.0.1:3478", "--turn-user", "dave:d", "--turn-users-file", "u.txt"], files: ["u.txt": text])
        XCTAssertEqual(flagged?.turnUsers.map(\.name), ["dave", "alice", "bob", "carol"])

        let error = refusal(["--turn", "127.0.0.1:3478", "--turn-users-file", "u.txt"], files: ["u.txt": "# ok\nalice:pw\nhunter2\n"],
                            mentions: ["--turn-users-file u.txt:", "line 3:", "NAME:PASSWORD"])
        XCTAssertFalse(error?.description.contains("hunter2") ?? true, "a bad line is not echoed: it may be a password")
        refusal(["--turn", "127.0.0.1:3478", "--turn-users-file", "missing.txt"], mentions: ["--turn-users-file missing.txt:", "cannot read"])
        refusal(["--turn", "127.0.0.1:3478", "--turn-users-file", "u.txt"], files: ["u.txt": String(repeating: "#", count: (1 << 20) + 1)],
                mentions: ["--turn-users-file u.txt:", "larger than 1 MiB"])
        refusal(["--turn", "127.0.0.1:3478", "--turn-users-file", "u.txt"], files: ["u.txt": "# nobody\n"],
                mentions: ["--turn 127.0.0.1:3478:", "needs credentials"])
        refusal(["--turn", "127.0.0.1:3478", "--turn-user", "alice:a", "--turn-users-file", "u.txt"], files: ["u.txt": "alice:b\n"],
                mentions: ["--turn-users-file u.txt:", "line 1:", "user \"alice\" is given by --turn-user too"])
    }

    func testTheUsersFileFromDisk() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mediarelay-turn-users-\(getpid()).txt")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data("erin:pw\n".utf8).write(to: url)
        guard case .run(let options) = try ServerOptions.parse(
            arguments: ["--turn", "127.0.0.1:3478", "--turn-users-file", url.path], environment: [:]) else { return XCTFail() }
        XCTAssertEqual(options.turnUsers, [TURNUser(name: "erin", password: "pw")])
        try Data([0x61, 0x3a, 0xff, 0xfe]).write(to: url)
        XCTAssertThrowsError(try ServerOptions.parse(arguments: ["--turn", "127.0.0.1:3478", "--turn-users-file", url.path], environment: [:])) {
            XCTAssertTrue("\($0)".contains("not UTF-8"), "\($0)")
        }
    }

    func testChecksAcrossOptions() {
        refusal(["--turn", "127.0.0.1:3478"], mentions: ["--turn 127.0.0.1:3478:", "needs credentials", "open relay"])
        XCTAssertNotNil(runOptions(["--turn", "127.0.0.1:3478", "--turn-secret", "s"]), "a secret alone is enough")
        refusal(["--turn-user", "a:b"], mentions: ["--turn-user:", "without a TURN listener", "--turn-tls HOST:PORT"])
        refusal(["--turn-secret", "s"], mentions: ["--turn-secret:", "without a TURN listener", "--turn-tls HOST:PORT"])
        refusal(["--turn-allowed-peer", "127.0.0.0/8"], mentions: ["--turn-allowed-peer:", "without a TURN listener", "--turn-tls HOST:PORT"])
        refusal(["--turn-denied-peer", "127.0.0.0/8"], mentions: ["--turn-denied-peer:", "without a TURN listener", "--turn-tls HOST:PORT"])
        refusal(base + ["--turn", "127.0.0.1:3478"], mentions: ["--turn 127.0.0.1:3478:", "given twice"])
        refusal(base + ["--forward", "127.0.0.1:3478=127.0.0.1:9"], mentions: ["--turn 127.0.0.1:3478:", "--forward 127.0.0.1:3478=127.0.0.1:9"])
        refusal(base + ["--turn-user", "base:other"], mentions: ["user \"base\" is given twice"])
        XCTAssertEqual(runOptions(base + ["--ports", "40000-40002", "--turn-port-share", "10"])?.turnPortLimit, 1,
                       "a share of a tiny range still leaves TURN one port")
    }
}
