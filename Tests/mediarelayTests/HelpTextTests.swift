import XCTest

@testable import mediarelay

final class HelpTextTests: XCTestCase {
    /// Typed out from the contract on purpose, not taken from OptionKey, so a flag missing from
    /// the table fails here.
    let contractFlags = [
        "--config", "--engine", "--gso", "--gro", "--workers", "--forward", "--ports", "--relay-address",
        "--advertise-address", "--http", "--control-token", "--dscp", "--service-class", "--ecn",
        "--ecn-marking", "--ecn-l4s-threshold", "--ecn-classic-threshold", "--ecn-backlog", "--ecn-backlog-l4s-threshold",
        "--ecn-backlog-classic-threshold",
        "--log-level", "--log-format", "--drain-seconds", "--ready-threshold", "--idle-timeout", "--max-clients", "--max-sessions",
        "--batch-size", "--max-datagram-size", "--egress-rate", "--free-bind", "--turn", "--turn-realm", "--turn-user", "--turn-users-file",
        "--turn-secret", "--turn-secret-file", "--turn-nonce-secret",
        "--turn-allowed-peer", "--turn-denied-peer", "--turn-max-allocations", "--turn-max-allocations-per-user",
        "--turn-bandwidth", "--turn-port-share", "--turn-max-channels", "--turn-unauthenticated-rate", "--turn-alternate",
        "--turn-alternate-domain", "--turn-tcp", "--turn-tls", "--tls-cert", "--tls-key", "--turn-max-connections",
        "--turn-max-connections-per-source", "--fast-path", "--fast-path-interface", "--help", "--version",
    ]

    func testHelpMentionsEveryFlagOfTheContract() {
        let help = HelpText.text
        for flag in contractFlags {
            XCTAssertTrue(help.contains("  \(flag)"), "help does not document \(flag)")
        }
    }

    func testHelpGivesEachOptionsDefaultAndAcceptedValues() {
        let help = HelpText.text
        for key in OptionKey.allCases {
            XCTAssertTrue(help.contains("default: \(key.defaultText); accepted: \(key.accepted)"), "\(key.flag)")
            XCTAssertTrue(help.contains("  \(key.configKey) ("), "config key \(key.configKey)")
        }
        for expected in ["auto, perpacket, mmsg, uring", "40000-40999", "127.0.0.1:9480", "interactiveVoice",
                         "MEDIARELAY_CONTROL_TOKEN", "idle_timeout_seconds", "1...256", "0...3600", "1...86400", "1...1024",
                         "512...65507", "Receive buffers per worker", "--batch-size x --max-datagram-size",
                         "load the TLS", "certificate and key again", "within 10 s", "after 60 s", "answered 442"] {
            XCTAssertTrue(help.contains(expected), "help does not mention \(expected)")
        }
    }

    /// Options whose help default is a description, not a value to give back: lists and
    /// values that are unset by default.
    let describedDefaults: Set<OptionKey> = [
        .forward, .controlToken, .turn, .turnUser, .turnUsersFile, .turnSecret, .turnSecretFile, .turnNonceSecret, .turnAllowedPeer,
        .turnDeniedPeer, .turnAlternate, .turnAlternateDomain, .turnTCP, .turnTLS, .tlsCert, .tlsKey,
        .fastPathInterface,
    ]

    func testTheHelpDefaultsAreTheParsedDefaults() throws {
        // Each default the help gives, passed back as the option's value, changes nothing.
        let turn = ["--turn", "127.0.0.1:3478", "--turn-secret", "s"]
        for key in OptionKey.allCases where !describedDefaults.contains(key) {
            let base = key.flag.hasPrefix("--turn") ? turn : []
            var value = key.defaultText
            if key == .workers {
                value = try XCTUnwrap(value.firstMatch(of: /\((\d+) here\)/)).output.1.description
            } else if key == .advertiseAddress {
                value = try XCTUnwrap(value.split(separator: " ").first).description
            } else if let note = value.range(of: " (") {
                value = String(value[..<note.lowerBound])
            }
            XCTAssertEqual(runOptions(base + [key.flag, value]), runOptions(base),
                           "\(key.flag): the help's default \(value) is not the default")
        }
    }

    func testEveryFlagInTheHelpIsAccepted() {
        // The reverse direction: help must not document a flag the parser refuses.
        let flags = HelpText.text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
            .map(String.init).filter { $0.wholeMatch(of: /--[a-z][a-z-]*/) != nil }
        for flag in Set(flags) {
            XCTAssertTrue(contractFlags.contains(flag), "help documents \(flag), which the contract does not have")
        }
    }
}
