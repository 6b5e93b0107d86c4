import Foundation
import NetAddress
import RelayCore
import XCTest

@testable import mediarelay

/// The fleet options: `--turn-alternate` (never this relay's own listener), its domain, and
/// `--ready-threshold`, on the command line and in the config file.
final class FleetOptionsTests: XCTestCase {
    let base = ["--turn", "127.0.0.1:3478", "--turn-secret", "s"]

    func testAlternatesSplitByTransportInOrder() {
        let options = runOptions(base + ["--turn-alternate", "127.0.0.2:3478", "--turn-alternate=tls:127.0.0.2:5349",
                                         "--turn-alternate", "[::1]:3478", "--turn-alternate-domain", "turn.example.org."])
        XCTAssertEqual(options?.turnAlternatesInForce, TurnAlternates(
            plain: [Endpoint(host: "127.0.0.2", port: 3478)!, Endpoint(host: "::1", port: 3478)!],
            tls: [Endpoint(host: "127.0.0.2", port: 5349)!], domain: "turn.example.org"))
    }

    func testAnAlternateThatIsThisRelaysOwnListenerIsRefused() {
        refusal(base + ["--turn-alternate", "127.0.0.1:3478"],
                mentions: ["--turn-alternate 127.0.0.1:3478:", "one of this relay's own TURN listeners"])
        // A wildcard listener is reached on loopback and on the relay's own addresses.
        let wildcard = ["--turn", "0.0.0.0:3478", "--turn-secret", "s", "--relay-address", "198.51.100.4"]
        refusal(wildcard + ["--turn-alternate", "127.0.0.5:3478"], mentions: ["--turn-alternate 127.0.0.5:3478:", "own TURN listeners"])
        refusal(wildcard + ["--turn-alternate", "198.51.100.4:3478"], mentions: ["own TURN listeners"])
        refusal(["--turn", "[::]:3478", "--turn-secret", "s", "--turn-alternate", "127.0.0.1:3478"], mentions: ["own TURN listeners"])
        // Behind a 1:1 NAT the advertised address is this relay too (a fleet list shared by
        // every node must leave each node's own address out).
        refusal(["--turn", "10.0.0.5:3478", "--turn-secret", "s", "--advertise-address", "203.0.113.10",
                 "--turn-alternate", "203.0.113.10:3478"], mentions: ["--turn-alternate 203.0.113.10:3478:", "own TURN listeners"])
        // Another port, another host, or an IPv6 address an IPv4 wildcard does not take: a sibling.
        XCTAssertNotNil(runOptions(wildcard + ["--turn-alternate", "127.0.0.5:3479", "--turn-alternate", "198.51.100.5:3478",
                                               "--turn-alternate", "[::1]:3478"]))
        // TLS listeners do not exist yet, so no tls: entry can be one of them.
        XCTAssertNotNil(runOptions(base + ["--turn-alternate", "tls:127.0.0.1:3478"]))
    }

    func testAtStartTheInterfacesCountAsOwnToo() throws {
        let options = try XCTUnwrap(runOptions(["--turn", "0.0.0.0:3478", "--turn-secret", "s",
                                                "--turn-alternate", "10.1.2.3:3478"]))
        XCTAssertThrowsError(try options.checkAlternates(ownAddresses: [Endpoint(host: "10.1.2.3", port: 0)!])) {
            XCTAssertTrue("\($0)".contains("own TURN listeners"), "\($0)")
        }
        XCTAssertNoThrow(try options.checkAlternates(ownAddresses: [Endpoint(host: "10.1.2.4", port: 0)!]))
    }

    func testAlternatesNeedAListenerAndComeOnce() {
        refusal(["--turn-alternate", "127.0.0.2:3478"], mentions: ["--turn-alternate:", "without a --turn listener"])
        refusal(["--turn-alternate-domain", "turn.example.org"], mentions: ["--turn-alternate-domain:", "without a --turn listener"])
        refusal(base + ["--turn-alternate", "127.0.0.2:3478", "--turn-alternate", "127.0.0.2:3478"],
                mentions: ["--turn-alternate 127.0.0.2:3478:", "given twice"])
        refusal(base + ["--turn-alternate-domain", String(repeating: "a", count: 64) + ".org"], mentions: ["a DNS name"])
        let many = (0..<65).flatMap { ["--turn-alternate", "127.0.1.\($0 + 1):3478"] }
        refusal(base + many, mentions: ["--turn-alternate", "at most 64"])
    }

    func testTheConfigFileTakesAListAndAFraction() {
        let listener = #""turn": ["127.0.0.1:3478"], "turn_secret": ["s"]"#
        let file = "{\(listener), \"turn_alternates\": [\"127.0.0.2:3478\", \"127.0.0.3:3478\"], \"ready_threshold\": 0.75}"
        let options = runOptions(["--config", "c.json"], files: ["c.json": file])
        XCTAssertEqual(options?.turnAlternates.map(\.description), ["127.0.0.2:3478", "127.0.0.3:3478"])
        XCTAssertEqual(options?.readyThreshold, 0.75)
        let replaced = runOptions(["--config", "c.json", "--turn-alternate", "127.0.0.4:3478", "--ready-threshold", "1"], files: ["c.json": file])
        XCTAssertEqual(replaced?.turnAlternates.map(\.description), ["127.0.0.4:3478"], "flags replace the file's list")
        XCTAssertEqual(replaced?.readyThreshold, 1)
        XCTAssertEqual(runOptions(["--config", "c.json"], files: ["c.json": #"{"ready_threshold": 1}"#])?.readyThreshold, 1)

        refusal(["--config", "c.json"], files: ["c.json": #"{"ready_threshold": 0}"#],
                mentions: [#"config c.json: key "ready_threshold": 0:"#, "above 0 and at most 1"])
        refusal(["--config", "c.json"], files: ["c.json": #"{"ready_threshold": "0.9"}"#],
                mentions: [#"key "ready_threshold""#, "expected a number"])
        refusal(["--config", "c.json"], files: ["c.json": "{\(listener), \"turn_alternates\": \"127.0.0.2:3478\"}"],
                mentions: [#"key "turn_alternates""#, "expected an array of strings"])
        refusal(["--config", "c.json"], files: ["c.json": "{\(listener), \"turn_alternates\": [\"127.0.0.1:3478\"]}"],
                mentions: ["--turn-alternate 127.0.0.1:3478:", "own TURN listeners"])
    }
}
