import Foundation
import NetAddress
import RelayCore
import TestSupport
import XCTest

@testable import mediarelay

/// The fleet options: `--turn-alternate` (this relay's own listeners left out), its domain, and
/// `--ready-threshold`, on the command line and in the config file.
final class FleetOptionsTests: XCTestCase {
    let base = ["--turn", "127.0.0.1:3478", "--turn-secret", "s"]

    func testTheNonceKeyComesFromTheNonceSecretElseTheRESTSecrets() {
        XCTAssertEqual(runOptions(base)?.turnNonceKeySecrets, [Array("s".utf8)], "the REST secret, which the fleet shares")
        XCTAssertEqual(runOptions(base + ["--turn-nonce-secret", "n1", "--turn-nonce-secret", "n2"])?.turnNonceKeySecrets,
                       [Array("n1".utf8), Array("n2".utf8)], "the nonce secrets win, in order")
        XCTAssertEqual(runOptions(["--turn", "127.0.0.1:3478", "--turn-user", "a:b"])?.turnNonceKeySecrets, [],
                       "static users alone: a key of this process")
        refusal(["--turn-nonce-secret", "n"], mentions: ["--turn-nonce-secret:", "without a TURN listener"])
    }

    func testAlternatesSplitByTransportInOrder() {
        let options = runOptions(base + ["--turn-alternate", "127.0.0.2:3478", "--turn-alternate=tls:127.0.0.2:5349",
                                         "--turn-alternate", "[::1]:3478", "--turn-alternate-domain", "turn.example.org."])
        XCTAssertEqual(options?.turnAlternatesInForce, TurnAlternates(
            plain: [Endpoint(host: "127.0.0.2", port: 3478)!, Endpoint(host: "::1", port: 3478)!],
            tls: [Endpoint(host: "127.0.0.2", port: 5349)!], domain: "turn.example.org"))
    }

    /// The entries of `arguments`' alternates that are this relay itself, with `own` as the
    /// host's interface addresses.
    private func ours(_ arguments: [String], own: [String] = []) -> [String] {
        guard let options = runOptions(arguments) else { return ["(refused)"] }
        let addresses = options.turnAddresses(hostAddresses: own.compactMap { Endpoint(host: $0, port: 0) })
        return options.alternatesThatAreThisRelay(addresses).map(\.description)
    }

    func testAnAlternateThatIsThisRelayIsLeftOutNotRefused() throws {
        XCTAssertEqual(ours(base + ["--turn-alternate", "127.0.0.1:3478", "--turn-alternate", "127.0.0.2:3478"]), ["127.0.0.1:3478"])
        // A wildcard listener is reached on loopback and on the relay's own addresses.
        let wildcard = ["--turn", "0.0.0.0:3478", "--turn-secret", "s", "--relay-address", "198.51.100.4"]
        XCTAssertEqual(ours(wildcard + ["--turn-alternate", "127.0.0.5:3478"]), ["127.0.0.5:3478"])
        XCTAssertEqual(ours(wildcard + ["--turn-alternate", "198.51.100.4:3478"]), ["198.51.100.4:3478"])
        XCTAssertEqual(ours(["--turn", "[::]:3478", "--turn-secret", "s", "--advertise-address", "203.0.113.10",
                             "--turn-alternate", "127.0.0.1:3478"]), ["127.0.0.1:3478"])
        // Behind a 1:1 NAT the advertised address is this relay too: a fleet list given to
        // every node names each node, and each leaves itself out.
        let natted = ["--turn", "10.0.0.5:3478", "--turn-secret", "s", "--advertise-address", "203.0.113.10",
                      "--turn-alternate", "203.0.113.10:3478", "--turn-alternate", "203.0.113.11:3478"]
        XCTAssertEqual(ours(natted), ["203.0.113.10:3478"])
        let options = try XCTUnwrap(runOptions(natted))
        let own = options.turnAddresses(hostAddresses: [Endpoint(host: "10.0.0.5", port: 0)!])
        XCTAssertEqual(options.turnAlternatesInForce(leavingOut: own).plain, [Endpoint(host: "203.0.113.11", port: 3478)!])
        // Another port, another host, or an IPv6 address an IPv4 wildcard does not take: a sibling.
        XCTAssertEqual(ours(wildcard + ["--turn-alternate", "127.0.0.5:3479", "--turn-alternate", "198.51.100.5:3478",
                                        "--turn-alternate", "[::1]:3478"]), [])
        // A tls: entry is compared with the TLS listeners, a plain one with UDP and TCP.
        XCTAssertEqual(ours(base + ["--turn-alternate", "tls:127.0.0.1:3478"]), [])
        let certificates = try CertificateFixture()
        let streams = base + ["--turn-tcp", "127.0.0.1:3479", "--turn-tls", "127.0.0.1:5349",
                              "--tls-cert", certificates.server.certificate, "--tls-key", certificates.server.key]
        XCTAssertEqual(ours(streams + ["--turn-alternate", "tls:127.0.0.1:5349", "--turn-alternate", "tls:127.0.0.1:3479",
                                       "--turn-alternate", "127.0.0.1:3479", "--turn-alternate", "127.0.0.1:5349"]),
                       ["tls:127.0.0.1:5349", "127.0.0.1:3479"])
        // The interfaces count as own (at start and on reload).
        let anyAddress = ["--turn", "0.0.0.0:3478", "--turn-secret", "s", "--advertise-address", "203.0.113.10",
                          "--turn-alternate", "10.1.2.3:3478"]
        XCTAssertEqual(ours(anyAddress, own: ["10.1.2.3"]), ["10.1.2.3:3478"])
        XCTAssertEqual(ours(anyAddress, own: ["10.1.2.4"]), [])
    }

    func testAlternatesNeedAListenerAndComeOnce() {
        refusal(["--turn-alternate", "127.0.0.2:3478"], mentions: ["--turn-alternate:", "without a TURN listener"])
        refusal(["--turn-alternate-domain", "turn.example.org"], mentions: ["--turn-alternate-domain:", "without a TURN listener"])
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
        XCTAssertNotNil(runOptions(["--config", "c.json"], files: ["c.json": "{\(listener), \"turn_alternates\": [\"127.0.0.1:3478\"]}"]),
                        "this relay in the list is left out, not refused")
    }
}
