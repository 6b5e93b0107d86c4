import NetAddress
import XCTest

@testable import mediarelay

final class OptionsTests: XCTestCase {
    func testDefaultsAreTheContractDefaults() {
        guard let options = runOptions([]) else { return }
        XCTAssertEqual(options.engine, .auto)
        XCTAssertTrue(options.gso)
        XCTAssertTrue(options.gro)
        XCTAssertEqual(options.workers, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        XCTAssertEqual(options.forwards, [])
        XCTAssertEqual(options.ports, PortRange(low: 40000, high: 40999))
        XCTAssertEqual(options.relayAddress, "0.0.0.0")
        XCTAssertEqual(options.advertiseAddress, "127.0.0.1")
        XCTAssertEqual(options.http, HostPort(host: "127.0.0.1", port: 9480))
        XCTAssertNil(options.controlToken)
        XCTAssertEqual(options.dscp, .mirror)
        XCTAssertEqual(options.serviceClass, .bestEffort)
        XCTAssertEqual(options.ecn, .preserve)
        XCTAssertTrue(options.ecnMarking)
        XCTAssertEqual(options.ecnL4SThreshold, 25)
        XCTAssertEqual(options.ecnClassicThreshold, 50)
        XCTAssertFalse(options.ecnBacklog)
        XCTAssertEqual(options.ecnBacklogL4SThreshold, 1000)
        XCTAssertEqual(options.ecnBacklogClassicThreshold, 5000)
        XCTAssertEqual(options.egressRate, 0)
        XCTAssertEqual(options.logLevel, .info)
        XCTAssertEqual(options.drainSeconds, 0)
        XCTAssertEqual(options.readyThreshold, 0.9)
        XCTAssertEqual(options.idleTimeoutSeconds, 60)
        XCTAssertEqual(options.maxClients, 10000)
        XCTAssertEqual(options.maxSessions, 10000)
        XCTAssertEqual(options.batchSize, 64)
        XCTAssertEqual(options.maxDatagramSize, 9000)
        XCTAssertNil(options.configPath)
    }

    func testEveryOptionAcceptsAGoodValueInBothSpellings() {
        let good: [(String, String, (ServerOptions) -> Bool)] = [
            ("--engine", "uring", { $0.engine == .uring }),
            ("--engine", "perpacket", { $0.engine == .perpacket }),
            ("--gso", "off", { !$0.gso }),
            ("--gro", "off", { !$0.gro }),
            ("--workers", "256", { $0.workers == 256 }),
            ("--forward", "127.0.0.1:7777=127.0.0.1:9000", {
                $0.forwards == [ForwardSpec(listen: HostPort(host: "127.0.0.1", port: 7777), upstream: HostPort(host: "127.0.0.1", port: 9000))]
            }),
            ("--ports", "1-65535", { $0.ports == PortRange(low: 1, high: 65535) }),
            ("--relay-address", "::", { $0.relayAddress == "::" && $0.advertiseAddress == "127.0.0.1" }),
            ("--advertise-address", "203.0.113.7", { $0.advertiseAddress == "203.0.113.7" }),
            ("--http", "[::1]:0", { $0.http == HostPort(host: "::1", port: 0) }),
            ("--control-token", "s3cret-T0ken", { $0.controlToken == "s3cret-T0ken" }),
            ("--dscp", "class", { $0.dscp == .class }),
            ("--service-class", "interactiveVoice", { $0.serviceClass == .interactiveVoice }),
            ("--ecn", "clear", { $0.ecn == .clear }),
            ("--ecn-marking", "off", { !$0.ecnMarking }),
            ("--ecn-l4s-threshold", "1", { $0.ecnL4SThreshold == 1 }),
            ("--ecn-classic-threshold", "99", { $0.ecnClassicThreshold == 99 }),
            ("--ecn-backlog", "off", { !$0.ecnBacklog }),
            ("--ecn-backlog", "on", { $0.ecnBacklog }),
            ("--ecn-backlog-l4s-threshold", "100", { $0.ecnBacklogL4SThreshold == 100 }),
            ("--ecn-backlog-classic-threshold", "1000000", { $0.ecnBacklogClassicThreshold == 1_000_000 }),
            ("--egress-rate", "12500000000", { $0.egressRate == 12_500_000_000 }),
            ("--egress-rate", "0", { $0.egressRate == 0 }),
            ("--free-bind", "on", { $0.freeBind }),
            ("--free-bind", "off", { !$0.freeBind }),
            ("--log-level", "debug", { $0.logLevel == .debug }),
            ("--log-format", "json", { $0.logFormat == .json }),
            ("--log-format", "text", { $0.logFormat == .text }),
            ("--drain-seconds", "3600", { $0.drainSeconds == 3600 }),
            ("--ready-threshold", "0.75", { $0.readyThreshold == 0.75 }),
            ("--ready-threshold", "1", { $0.readyThreshold == 1 }),
            ("--idle-timeout", "86400", { $0.idleTimeoutSeconds == 86400 }),
            ("--max-clients", "5", { $0.maxClients == 5 }),
            ("--max-sessions", "7", { $0.maxSessions == 7 }),
            ("--batch-size", "1024", { $0.batchSize == 1024 }),
            ("--max-datagram-size", "65507", { $0.maxDatagramSize == 65507 }),
            ("--fast-path", "tc", { $0.fastPath == .tc }),
            ("--fast-path", "xdp", { $0.fastPath == .xdp }),
            ("--fast-path", "auto", { $0.fastPath == .auto }),
            ("--fast-path-interface", "eth0.100", { $0.fastPathInterfaces == ["eth0.100"] }),
            ("--fast-path-interface", "enp1s0f1np1abc", { $0.fastPathInterfaces == ["enp1s0f1np1abc"] }),
        ]
        for (flag, value, check) in good {
            for arguments in [[flag, value], ["\(flag)=\(value)"]] {
                guard let options = runOptions(arguments) else { continue }
                XCTAssertTrue(check(options), "\(arguments) did not take effect")
            }
        }
        // TURN options need a listener and credentials beside them, the certificate options a TLS
        // listener: TURNOptionsTests and TURNStreamOptionsTests cover them.
        XCTAssertEqual(Set(good.map(\.0)), Set(OptionKey.allCases.map(\.flag).filter { !$0.hasPrefix("--turn") && !streamTURNFlags.contains($0) }),
                       "a flag has no good-value case")
    }

    func testAdvertisedAddressMustMatchTheRelayAddressFamily() throws {
        XCTAssertThrowsError(try ServerOptions.parse(arguments: ["--advertise-address", "2001:db8::7"], environment: [:])) { error in
            XCTAssertTrue("\(error)".contains("same family as --relay-address 0.0.0.0"), "\(error)")
        }
        // A dual-stack relay address takes either family.
        for advertised in ["2001:db8::7", "203.0.113.7"] {
            guard case .run(let options) = try ServerOptions.parse(
                arguments: ["--relay-address", "::", "--advertise-address", advertised], environment: [:]) else { return XCTFail() }
            XCTAssertEqual(options.advertiseAddress, advertised)
        }
    }

    func testHelpWinsEvenBesideAMistake() throws {
        XCTAssertEqual(try ServerOptions.parse(arguments: ["--bogus", "--help"], environment: [:]), .help(HelpText.text))
        XCTAssertEqual(try ServerOptions.parse(arguments: ["--engine", "warp", "--version"], environment: [:]), .version("mediarelay 0.1.0"))
    }

    func testEveryOptionRefusesABadValueWithOneLineNamingIt() {
        let bad: [(String, String, String)] = [
            ("--engine", "foo", "expected one of auto, perpacket, mmsg, uring"),
            ("--gso", "yes", "expected one of on, off"),
            ("--gro", "1", "expected one of on, off"),
            ("--workers", "0", "1...256"),
            ("--workers", "257", "1...256"),
            ("--workers", "two", "1...256"),
            ("--forward", "127.0.0.1:7777", "LISTEN=UPSTREAM"),
            ("--forward", "localhost:7777=127.0.0.1:9000", "LISTEN=UPSTREAM"),
            ("--forward", "127.0.0.1:0=127.0.0.1:9000", "LISTEN=UPSTREAM"),
            ("--forward", "::1:7777=127.0.0.1:9000", "LISTEN=UPSTREAM"),
            ("--ports", "50000-40000", "LOW <= HIGH"),
            ("--ports", "0-10", "LOW-HIGH"),
            ("--ports", "1-65536", "LOW-HIGH"),
            ("--ports", "40000", "LOW-HIGH"),
            ("--relay-address", "relay.example.com", "host names are not resolved"),
            ("--relay-address", "1.2.3", "IPv4 or IPv6"),
            ("--advertise-address", "0.0.0.0", "wildcard"),
            ("--advertise-address", "[::1]", "IPv4 or IPv6"),
            ("--http", "localhost:9480", "IP literal"),
            ("--http", "127.0.0.1:65536", "HOST:PORT"),
            ("--http", "127.0.0.1", "HOST:PORT"),
            ("--http", "[127.0.0.1]:80", "HOST:PORT"),
            ("--dscp", "keep", "expected one of mirror, class, zero"),
            ("--service-class", "voice", "interactiveVoice"),
            ("--ecn", "set", "expected one of preserve, clear"),
            ("--ecn-marking", "yes", "expected one of on, off"),
            ("--ecn-l4s-threshold", "0", "1...99"),
            ("--ecn-classic-threshold", "100", "1...99"),
            ("--ecn-backlog", "1", "expected one of on, off"),
            ("--ecn-backlog-l4s-threshold", "99", "100...1000000"),
            ("--ecn-backlog-l4s-threshold", "1ms", "100...1000000"),
            ("--ecn-backlog-classic-threshold", "1000001", "100...1000000"),
            ("--egress-rate", "124999", "125000...12500000000"),
            ("--egress-rate", "12500000001", "125000...12500000000"),
            ("--log-level", "trace", "debug, info, warning, error"),
            ("--log-format", "xml", "text, json"),
            ("--drain-seconds", "3601", "0...3600"),
            ("--drain-seconds", "-1", "0...3600"),
            ("--ready-threshold", "0", "above 0 and at most 1"),
            ("--ready-threshold", "1.01", "above 0 and at most 1"),
            ("--ready-threshold", "90%", "above 0 and at most 1"),
            ("--ready-threshold", "1e-1", "above 0 and at most 1"),
            ("--idle-timeout", "0", "1...86400"),
            ("--max-clients", "0", "1...1000000"),
            ("--max-sessions", "1e6", "1...1000000"),
            ("--batch-size", "1025", "1...1024"),
            ("--batch-size", "99999999999999999999", "1...1024"),
            ("--max-datagram-size", "65508", "512...65507"),
            ("--max-datagram-size", "511", "512...65507"),
            ("--fast-path", "on", "expected one of off, auto, tc, xdp"),
            ("--fast-path", "XDP", "expected one of off, auto, tc, xdp"),
            ("--fast-path-interface", "", "1...15 characters"),
            ("--free-bind", "yes", "expected one of on, off"),
            ("--fast-path-interface", "a-name-of-16-chr", "1...15 characters"),
            ("--fast-path-interface", "eth0:1", "no space"),
            ("--fast-path-interface", "../x", "no space"),
            ("--fast-path-interface", "eth 0", "no space"),
        ]
        for (flag, value, expected) in bad {
            // An empty value is named as empty, after the flag alone.
            let shown = value.isEmpty ? "\(flag): empty value" : "\(flag) \(value):"
            refusal([flag, value], mentions: [shown, expected])
            refusal(["\(flag)=\(value)"], mentions: [shown, expected])
        }
        XCTAssertEqual(Set(bad.map(\.0)).union(["--control-token"]),
                       Set(OptionKey.allCases.map(\.flag).filter { !$0.hasPrefix("--turn") && !streamTURNFlags.contains($0) }),
                       "a flag has no bad-value case")
    }

    /// ECT(1) is marked at the shallower threshold (of a burst) and after the shorter wait (the
    /// backlog): thresholds the other way round (or equal) would mark classic senders first, so
    /// start-up refuses them in one line naming both, a classic one below the L4S default too.
    func testTheL4SThresholdsMustBeBelowTheClassicOnes() {
        let pairs: [(l4s: String, classic: String, bad: [(String, String)], belowDefault: (String, String), good: (String, String))] = [
            ("--ecn-l4s-threshold", "--ecn-classic-threshold", [("50", "50"), ("60", "40")], ("20", "25"), ("49", "50")),
            ("--ecn-backlog-l4s-threshold", "--ecn-backlog-classic-threshold", [("5000", "5000"), ("8000", "2000")],
             ("500", "1000"), ("4999", "5000")),
        ]
        for pair in pairs {
            for (l4s, classic) in pair.bad {
                let error = refusal([pair.l4s, l4s, pair.classic, classic],
                                    mentions: ["\(pair.l4s) \(l4s):", "must be below \(pair.classic) (\(classic))"])
                XCTAssertEqual(error?.description.contains("\n"), false)
            }
            let (classic, defaultL4S) = pair.belowDefault
            _ = refusal([pair.classic, classic], mentions: ["\(pair.l4s) \(defaultL4S):", "(\(classic))"])
            XCTAssertNotNil(runOptions([pair.l4s, pair.good.0, pair.classic, pair.good.1]))
        }
    }

    func testTheExampleErrorOfTheContract() {
        XCTAssertEqual(
            refusal(["--engine", "foo"], mentions: [])?.description,
            "mediarelay: --engine foo: expected one of auto, perpacket, mmsg, uring"
        )
    }

    func testABadTokenIsRefusedWithoutEchoingIt() {
        for token in ["two words", "", "tab\there", String(repeating: "x", count: 1025)] {
            let error = refusal(["--control-token=\(token)"], mentions: ["--control-token", "visible ASCII"])
            if token.count > 3 { XCTAssertFalse(error?.description.contains(token) ?? true) }
        }
    }

    func testUnknownMissingRepeatedAndStrayArguments() {
        refusal(["--engines", "uring"], mentions: ["--engines", "unknown option"])
        refusal(["-x"], mentions: ["-x", "unknown option"])
        refusal(["--engine"], mentions: ["--engine", "missing value", "auto, perpacket"])
        refusal(["--engine", "--gso", "on"], mentions: ["--engine", "missing value"])
        refusal(["--config"], mentions: ["--config", "missing value"])
        refusal(["--workers", "2", "--workers=3"], mentions: ["--workers", "more than once"])
        refusal(["--config", "a.json", "--config", "b.json"], mentions: ["--config", "more than once"])
        refusal(["uring"], mentions: ["uring", "unexpected argument"])
        refusal(["--version=2"], mentions: ["--version", "takes no value"])
    }

    func testValueThatLooksOdd() {
        refusal(["--engine", "a\nmediarelay[info] forged"], mentions: ["--engine"])
        let long = String(repeating: "z", count: 5000)
        let error = refusal(["--engine", long], mentions: ["--engine", "..."])
        XCTAssertLessThan(error?.description.count ?? 0, 300)
    }

    func testForwardRepeatsAndIPv6Specs() {
        guard let options = runOptions([
            "--forward", "[::1]:7777=[2001:db8::1]:9000",
            "--forward=0.0.0.0:7778=[::ffff:192.0.2.1]:9001",
            "--forward", "[::]:7779=127.0.0.1:9002",
        ]) else { return }
        XCTAssertEqual(options.forwards.map(\.description), [
            "[::1]:7777=[2001:db8::1]:9000",
            "0.0.0.0:7778=[::ffff:192.0.2.1]:9001",
            "[::]:7779=127.0.0.1:9002",
        ])
        XCTAssertEqual(options.forwards[0].listen, HostPort(host: "::1", port: 7777))
        XCTAssertTrue(options.forwards[0].upstream.isIPv6)
        refusal(["--forward", "[::1]:7777=[2001:db8::1]"], mentions: ["--forward"])
        refusal(["--forward", "[::1:7777=127.0.0.1:9000"], mentions: ["--forward"])
        refusal(["--forward", "[fe80::1%eth0]:7777=127.0.0.1:9000"], mentions: ["--forward"])
        refusal(
            ["--forward", "127.0.0.1:7777=127.0.0.1:9000", "--forward", "127.0.0.1:7777=127.0.0.1:9001"],
            mentions: ["--forward 127.0.0.1:7777=127.0.0.1:9001", "another rule"]
        )
    }

    func testAtMost256ForwardRules() {
        let rules = (0..<257).flatMap { ["--forward", "127.0.0.1:\(1000 + $0)=127.0.0.1:9000"] }
        guard let options = runOptions(Array(rules.dropLast(2))) else { return }
        XCTAssertEqual(options.forwards.count, 256)
        refusal(rules, mentions: ["--forward", "at most 256"])
    }

    func testAdvertiseAddressFollowsTheRelayAddress() {
        XCTAssertEqual(runOptions(["--relay-address", "192.0.2.5"])?.advertiseAddress, "192.0.2.5")
        XCTAssertEqual(runOptions(["--relay-address", "::"])?.advertiseAddress, "127.0.0.1")
        XCTAssertEqual(runOptions(["--relay-address", "::", "--advertise-address", "192.0.2.9"])?.advertiseAddress, "192.0.2.9")
    }

    func testHTTPThatIsNotLoopbackNeedsAToken() {
        refusal(["--http", "0.0.0.0:9480"], mentions: ["--http 0.0.0.0:9480", "control token", "MEDIARELAY_CONTROL_TOKEN"])
        refusal(["--http", "[::]:9480"], mentions: ["--http [::]:9480", "control token"])
        refusal(["--http", "192.0.2.1:9480"], environment: ["MEDIARELAY_CONTROL_TOKEN": ""], mentions: ["control token"])
        XCTAssertEqual(runOptions(["--http", "0.0.0.0:9480", "--control-token", "t"])?.controlToken, "t")
        XCTAssertEqual(runOptions(["--http", "127.0.0.2:9480"])?.http.host, "127.0.0.2")
        XCTAssertEqual(runOptions(["--http", "[::1]:9480"])?.http.host, "::1")
        XCTAssertEqual(runOptions(["--http", "[::ffff:127.0.0.1]:9480"])?.http.port, 9480)
    }

    func testTokenFromTheEnvironment() {
        let environment = ["MEDIARELAY_CONTROL_TOKEN": "from-env"]
        XCTAssertEqual(runOptions([], environment: environment)?.controlToken, "from-env")
        XCTAssertEqual(runOptions(["--http", "0.0.0.0:1"], environment: environment)?.http.port, 1)
        XCTAssertEqual(runOptions(["--control-token", "flag"], environment: environment)?.controlToken, "flag")
        refusal([], environment: ["MEDIARELAY_CONTROL_TOKEN": "has space"], mentions: ["MEDIARELAY_CONTROL_TOKEN:", "visible ASCII"])
    }

    func testHelpAndVersion() throws {
        XCTAssertEqual(try parse(["--version"]), .version("mediarelay 0.1.0"))
        XCTAssertEqual(ServerOptions.version, "0.1.0")
        // Help wins even over a value that would be refused, as people type --help to find out why.
        XCTAssertEqual(try parse(["--engine", "foo", "--help"]), .help(HelpText.text))
        XCTAssertEqual(try parse(["-h"]), .help(HelpText.text))
    }
}
