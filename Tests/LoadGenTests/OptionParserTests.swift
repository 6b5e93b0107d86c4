@testable import ClientSockets
@testable import LoadComparison
import XCTest
@testable import LoadGen

final class OptionParserTests: XCTestCase {
    func error(_ args: [String]) -> String? {
        do { _ = try OptionParser.parse(args); return nil } catch { return error.message }
    }

    func testFullCommandLine() throws {
        let c = try OptionParser.parse(["--relay", "http://127.0.0.1:9480", "--token", "t", "--streams", "20", "--rate", "50000",
                                        "--size", "200", "--seconds", "3", "--tos", "184", "--bidirectional", "--json", "--warmup", "0.2"])
        guard case .run(let o) = c else { return XCTFail("not a run: \(c)") }
        XCTAssertEqual(o.relay, "http://127.0.0.1:9480")
        XCTAssertEqual(o.token, "t")
        XCTAssertEqual(o.streams, 20)
        XCTAssertEqual(o.rate, 50_000)
        XCTAssertEqual(o.tos, 184)
        XCTAssertTrue(o.bidirectional && o.json)
        XCTAssertEqual(o.shape.datagramsPerSecond, 50_000)
    }

    func testForwardRuleAndProfiles() throws {
        guard case .run(let o) = try OptionParser.parse(["--target", "127.0.0.1:7777", "--upstream-listen", "127.0.0.1:9000",
                                                        "--profile", "video", "--bitrate", "4000000"]) else { return XCTFail() }
        XCTAssertEqual(o.target, "127.0.0.1:7777")
        XCTAssertEqual(o.profile, .video)
        XCTAssertNil(o.relay)
        XCTAssertEqual(try OptionParser.parse(["--help"]), .help)
        XCTAssertEqual(try OptionParser.parse(["compare", "--help"]), .help)
    }

    func testErrorsNameTheOption() {
        let cases: [([String], String)] = [
            (["--relay", "http://127.0.0.1:1", "--streams", "0"], "--streams 0: accepted: an integer 1...10000"),
            (["--relay", "http://127.0.0.1:1", "--streams", "ten"], "--streams ten:"),
            (["--relay", "http://127.0.0.1:1", "--rate", "-5"], "--rate -5:"),
            (["--relay", "http://127.0.0.1:1", "--size", "10"], "--size 10: accepted: an integer 32...9000"),
            (["--relay", "http://127.0.0.1:1", "--profile", "opera"], "--profile opera: accepted: constant, voice, game, video"),
            (["--relay", "http://127.0.0.1:1", "--tos", "256"], "--tos 256:"),
            (["--relay", "http://127.0.0.1:1", "--seconds"], "--seconds: needs a value"),
            (["--relay", "ftp://127.0.0.1:1"], "--relay ftp://127.0.0.1:1: expected http://HOST:PORT"),
            (["--streams", "2"], "--relay: required"),
            (["--relay", "http://127.0.0.1:1", "--bogus"], "--bogus: unknown option"),
            (["--target", "127.0.0.1:7777"], "--target: needs --upstream-listen"),
            (["--target", "nope", "--upstream-listen", "127.0.0.1:9"], "--target nope: accepted: HOST:PORT"),
            (["--relay", "http://127.0.0.1:1", "--profile", "voice", "--rate", "10"], "--rate: only with --profile constant"),
            (["--relay", "http://127.0.0.1:1", "--seconds", "1", "--warmup", "2"], "--warmup 2.0: must be shorter"),
            (["--relay", "http://127.0.0.1:1", "--token", ""], "--token: must not be empty"),
            (["compare"], "compare --server: required"),
            (["--relay", "http://no.such.host.invalid:1"], "--relay http://no.such.host.invalid:1: no.such.host.invalid: cannot resolve"),
            (["compare", "--server", "x", "--repeats", "0"], "--repeats 0:"),
            (["--turn", "127.0.0.1:3478"], "--turn: needs --turn-user NAME:PASSWORD or --turn-secret SECRET"),
            (["--turn", "127.0.0.1:3478", "--turn-user", "nameonly"], "--turn-user nameonly: accepted: NAME:PASSWORD"),
            (["--turn", "127.0.0.1:3478", "--turn-user", "a:b", "--turn-secret", "s"], "--turn-secret: give one credential"),
            (["--turn", "127.0.0.1:3478", "--turn-secret", ""], "--turn-secret: must not be empty"),
            (["--turn", "nope", "--turn-secret", "s"], "--turn nope: accepted: HOST:PORT"),
            (["--turn", "127.0.0.1:3478", "--turn-secret", "s", "--target", "127.0.0.1:9", "--upstream-listen", "127.0.0.1:8"],
             "--turn: not with --target"),
            (["--relay", "http://127.0.0.1:1", "--turn-secret", "s"], "--turn-user/--turn-secret/--turn-lifetime/--turn-refresh: only with --turn"),
            (["--turn", "127.0.0.1:3478", "--turn-secret", "s", "--turn-lifetime", "0"], "--turn-lifetime 0: accepted: an integer 1...3600"),
        ]
        for (args, expected) in cases {
            guard let message = error(args) else { XCTFail("\(args) accepted"); continue }
            XCTAssertTrue(message.hasPrefix(expected), "\(args): got '\(message)', want prefix '\(expected)'")
            XCTAssertFalse(message.contains("\n"), "one line")
        }
    }

    func testTurnModeWithStatsFromEitherSide() throws {
        guard case .run(let o) = try OptionParser.parse(["--turn", "[::1]:3478", "--turn-user", "u:p:w", "--relay-pid", "42",
                                                        "--turn-refresh", "2", "--drain", "3"]) else { return XCTFail() }
        XCTAssertEqual(o.turn, "[::1]:3478")
        XCTAssertEqual(o.turnCredential, .user(name: "u", password: "p:w"), "the password may hold colons")
        XCTAssertNil(o.relay, "--relay is optional in TURN mode (coturn has no /v1/stats)")
        XCTAssertEqual(o.relayPID, 42)
        XCTAssertEqual(o.turnRefresh, 2)
        XCTAssertEqual(o.turnLifetime, 600)
        XCTAssertEqual(o.drain, 3)
        guard case .run(let r) = try OptionParser.parse(["--turn", "127.0.0.1:3478", "--turn-secret", "s",
                                                        "--relay", "http://127.0.0.1:9480"]) else { return XCTFail() }
        XCTAssertEqual(r.turnCredential, .secret("s"))
        XCTAssertEqual(r.relay, "http://127.0.0.1:9480")
    }

    func testTurnTransportPeerAndIndications() throws {
        guard case .run(let o) = try OptionParser.parse(["--turn", "localhost:5349", "--turn-user", "u:p", "--turn-transport", "tls",
                                                        "--tls-ca", "/tmp/ca.pem", "--turn-peer", "127.0.0.1:3480",
                                                        "--turn-send-indications"]) else { return XCTFail() }
        XCTAssertEqual(o.turnTransport, .tls)
        XCTAssertEqual(o.tlsCA, "/tmp/ca.pem")
        XCTAssertEqual(o.turnPeer, "127.0.0.1:3480")
        XCTAssertTrue(o.turnSendIndications)
        guard case .run(let d) = try OptionParser.parse(["--turn", "127.0.0.1:3478", "--turn-user", "u:p"]) else { return XCTFail() }
        XCTAssertEqual(d.turnTransport, .udp, "UDP unless asked")
        XCTAssertFalse(d.turnSendIndications)
        let turn = ["--turn", "127.0.0.1:3478", "--turn-user", "u:p"]
        XCTAssertEqual(error(turn + ["--turn-transport", "sctp"]), "--turn-transport sctp: accepted: udp, tcp, tls")
        XCTAssertEqual(error(turn + ["--turn-transport", "tcp", "--tls-ca", "ca.pem"]), "--tls-ca: only with --turn-transport tls")
        XCTAssertEqual(error(turn + ["--turn-peer", "127.0.0.1:9", "--bidirectional"]),
                       "--turn-peer: not with --bidirectional (the echo peer sends every datagram back already)")
        XCTAssertEqual(error(turn + ["--turn-peer", "nowhere"]), "--turn-peer nowhere: accepted: HOST:PORT or [IPv6]:PORT")
        XCTAssertTrue(error(["--relay", "http://127.0.0.1:1", "--turn-transport", "tcp"])?.hasSuffix("only with --turn HOST:PORT") == true)
        XCTAssertTrue(error(["--relay", "http://127.0.0.1:1", "--turn-send-indications"])?.hasSuffix("only with --turn HOST:PORT") == true)
    }

    func testTurnPeersEach() throws {
        let turn = ["--turn", "127.0.0.1:3478", "--turn-user", "u:p"]
        guard case .run(let o) = try OptionParser.parse(turn + ["--turn-peer", "127.1.0.1:3480", "--turn-peers", "each"]) else { return XCTFail() }
        XCTAssertEqual(o.turnPeers, .each)
        guard case .run(let d) = try OptionParser.parse(turn + ["--turn-peer", "127.1.0.1:3480"]) else { return XCTFail() }
        XCTAssertEqual(d.turnPeers, .shared, "one echo peer for all unless asked")
        XCTAssertEqual(error(turn + ["--turn-peers", "some"]), "--turn-peers some: accepted: shared, each")
        XCTAssertEqual(error(turn + ["--turn-peers", "each"]),
                       "--turn-peers each: needs --turn-peer HOST:PORT (an echo peer listening on every client's address)")
        XCTAssertEqual(error(turn + ["--turn-peer", "127.1.0.1:3480", "--turn-peers", "each", "--bidirectional"]),
                       "--turn-peers each: not with --bidirectional (each client's echo peer sends its datagrams back already)")
        XCTAssertEqual(error(turn + ["--turn-peer", "[::1]:3480", "--turn-peers", "each"]),
                       "--turn-peers each: --turn-peer [::1]:3480 is IPv6; the peers are IPv4 addresses counted up from it (e.g. 127.1.0.1:PORT)")
        XCTAssertEqual(error(turn + ["--turn-peer", "127.1.0.200:3480", "--turn-peers", "each", "--streams", "100"]),
                       "--turn-peers each: 100 clients counted up from --turn-peer 127.1.0.200:3480 pass .255 "
                       + "(client i's peer is A.B.(C+i/250).(D+i%250)); start from 127.1.0.1")
        XCTAssertTrue(error(["--relay", "http://127.0.0.1:1", "--turn-peers", "each"])?.hasSuffix("only with --turn HOST:PORT") == true)
    }

    func testCompareDefaultsAndQuick() throws {
        guard case .compare(let o) = try OptionParser.parse(["compare", "--server", "/x/mediarelay"]) else { return XCTFail() }
        XCTAssertEqual(o.repeats, 3)
        XCTAssertEqual(o.seconds, 1.5)
        XCTAssertEqual(o.out, "bench/results/latest")
        XCTAssertTrue(helpText.contains("--seconds [1.5]"))
        guard case .compare(let q) = try OptionParser.parse(["compare", "--server", "s", "--quick", "--out", "o"]) else { return XCTFail() }
        XCTAssertEqual(q.repeats, 1)
        XCTAssertEqual(q.seconds, 1)
        guard case .compare(let q2) = try OptionParser.parse(["compare", "--server", "s", "--quick", "--repeats", "2"]) else { return XCTFail() }
        XCTAssertEqual(q2.repeats, 2)
    }

    func testReferenceSenderGSOAndCompareSelections() throws {
        guard case .run(let o) = try OptionParser.parse(["--legs", "/tmp/legs", "--forwarder-stats", "/tmp/s", "--relay-pid", "7",
                                                        "--profile", "video", "--sender-gso"]) else { return XCTFail() }
        XCTAssertEqual(o.legs, "/tmp/legs")
        XCTAssertEqual(o.forwarderStats, "/tmp/s")
        XCTAssertTrue(o.senderGSO)
        XCTAssertEqual(error(["--relay", "http://127.0.0.1:1", "--sender-gso"]),
                       "--sender-gso: only with --profile video (a frame is what leaves as one GSO send)")
        XCTAssertEqual(error(["--legs", "/tmp/legs", "--relay", "http://127.0.0.1:1"]),
                       "--legs: not with --relay or --target (it stands for both)")
        XCTAssertEqual(error(["--legs", "/tmp/legs", "--forwarder-stats", "/tmp/s"]),
                       "--forwarder-stats: needs --relay-pid PID (the forwarder's CPU clock)")

        guard case .compare(let c) = try OptionParser.parse(["compare", "--server", "s", "--reference", "r", "--loads", "200k,video50,voice10",
                                                            "--engines", "uring+gso,c-perpacket", "--workers", "1,2",
                                                            "--relay-host", "10.0.0.2", "--server-prefix", "ip netns exec x"]) else { return XCTFail() }
        let comparison = Comparison(options: c, log: { _ in })
        XCTAssertEqual(comparison.loads.map(\.label), ["200k", "video50", "voice10"])
        XCTAssertEqual(comparison.loads.map(\.offeredRate), [200_000, 50 * 30 * 7, 500])
        XCTAssertEqual(comparison.engines.map(\.name), ["uring+gso", "c-perpacket", "uring+gso w2"], "the C forwarder has one thread")
        XCTAssertEqual(comparison.engines.map(\.workers), [1, 1, 2])
        XCTAssertEqual(c.serverPrefix, ["ip", "netns", "exec", "x"])
        XCTAssertEqual(error(["compare", "--server", "s", "--loads", "fast"]),
                       "compare --loads fast: accepted: 10k, 50k, 100k, 200k, 100kx2, voice2000, video200, "
                       + "NNNk (1...2000 thousand datagrams/s, 20 streams), NNNkxS (S streams, 1...10000), voiceN, videoN (N 1...10000)")
        XCTAssertEqual(error(["compare", "--server", "s", "--engines", "dpdk"]),
                       "compare --engines dpdk: accepted: perpacket, mmsg, uring, uring+gso, mmsg+gso, mmsg+gso+gro, "
                       + "c-perpacket, c-mmsg, c-uring, c-uring+gso, c-mmsg+gso, c-mmsg+gso+gro")
    }

    func testConstantLoadsOverManySessions() throws {
        guard case .compare(let c) = try OptionParser.parse(["compare", "--server", "s", "--loads", "50k,50kx200,200kx200"]) else { return XCTFail() }
        let loads = Comparison(options: c, log: { _ in }).loads
        XCTAssertEqual(loads.map(\.label), ["50k", "50kx200", "200kx200"])
        XCTAssertEqual(loads.map(\.streams), [20, 200, 200])
        XCTAssertEqual(loads.map(\.offeredRate), [50_000, 50_000, 200_000], "the rate is the total over every stream")
        XCTAssertEqual(loads.map(\.profile), [.constant, .constant, .constant])
        // Each bad label is named alone, on one line, the good ones beside it accepted.
        for bad in ["50kx0", "50kx", "x200", "50kx10001", "50kx2.5", "50kx+3", "50kx200x2", "0kx200", "2001kx200", "50k x200", "50x200", "kx200"] {
            let said = error(["compare", "--server", "s", "--loads", "20k,\(bad),voice10"])
            XCTAssertTrue(said?.hasPrefix("compare --loads \(bad): accepted: ") == true, "\(bad): \(said ?? "accepted")")
            XCTAssertEqual(said?.contains("\n"), false)
        }
    }

    func testCReferencesPerBackend() throws {
        func engines(_ arguments: [String]) throws -> [String] {
            guard case .compare(let c) = try OptionParser.parse(["compare", "--server", "s"] + arguments) else { throw LoadError("not compare") }
            return Comparison(options: c, log: { _ in }).engines.map(\.name)
        }
        let relay = ["perpacket", "mmsg", "uring", "uring+gso", "mmsg+gso", "mmsg+gso+gro"]
        XCTAssertEqual(try engines([]), relay)
        XCTAssertEqual(try engines(["--reference", "r"]), relay + ["c-perpacket"], "make demo's default: the C per-packet forwarder alone")
        XCTAssertEqual(try engines(["--reference", "r", "--references", "all"]), relay + relay.map { "c-" + $0 })
        XCTAssertEqual(try engines(["--reference", "r", "--references", "all", "--engines", "mmsg,uring+gso"]),
                       ["mmsg", "uring+gso", "c-mmsg", "c-uring+gso"], "the counterparts of the relay engines that run")
        XCTAssertEqual(try engines(["--reference", "r", "--engines", "mmsg,c-uring"]), ["mmsg", "c-uring"])
        XCTAssertEqual(try engines(["--reference", "r", "--references", "all", "--engines", "uring,c-perpacket", "--workers", "1,2"]),
                       ["uring", "c-uring", "c-perpacket", "uring w2"])
        XCTAssertEqual(error(["compare", "--server", "s", "--references", "all"]),
                       "compare --references: only with --reference PATH (the C forwarder, built by make reference)")
        XCTAssertEqual(error(["compare", "--server", "s", "--engines", "mmsg,c-mmsg"]),
                       "compare --engines c-mmsg: needs --reference PATH (the C forwarder, built by make reference)")
        XCTAssertEqual(error(["compare", "--server", "s", "--reference", "r", "--references", "some"]),
                       "compare --references some: accepted: perpacket, all")
    }

    func testComparePin() throws {
        guard case .compare(let c) = try OptionParser.parse(["compare", "--server", "s", "--pin", "split"]) else { return XCTFail() }
        XCTAssertEqual(c.pin, .split)
        guard case .compare(let d) = try OptionParser.parse(["compare", "--server", "s"]) else { return XCTFail() }
        XCTAssertEqual(d.pin, .off)
        XCTAssertEqual(error(["compare", "--server", "s", "--pin", "on"]), "compare --pin on: accepted: off, split, relay")
        XCTAssertEqual(error(["compare", "--server", "s", "--pin", "split", "--workers", "1,2"]),
                       "compare --pin split: only with --workers 1 (every thread of the relay goes on one CPU)")
        guard case .compare(let relay) = try OptionParser.parse(["compare", "--server", "s", "--pin", "relay"]) else { return XCTFail() }
        XCTAssertEqual(relay.pin, .relay)
        XCTAssertEqual(error(["compare", "--server", "s", "--pin", "relay", "--workers", "2"]),
                       "compare --pin relay: only with --workers 1 (every thread of the relay goes on one CPU)")
    }

    func testRepeatsUpToAMaximumAndABudget() throws {
        guard case .compare(let fixed) = try OptionParser.parse(["compare", "--server", "s", "--repeats", "4"]) else { return XCTFail() }
        XCTAssertEqual(fixed.stoppingRule, StoppingRule(minimum: 4, maximum: 4), "without --max-repeats, as many rounds as --repeats")
        XCTAssertNil(fixed.budget)
        guard case .compare(let open) = try OptionParser.parse(["compare", "--server", "s", "--max-repeats", "9", "--budget", "330"]) else { return XCTFail() }
        XCTAssertEqual(open.stoppingRule, StoppingRule(minimum: 3, maximum: 9))
        XCTAssertEqual(open.budget, 330)
        guard case .compare(let quick) = try OptionParser.parse(["compare", "--server", "s", "--quick"]) else { return XCTFail() }
        XCTAssertEqual(quick.stoppingRule, StoppingRule(minimum: 1, maximum: 1))
        XCTAssertEqual(error(["compare", "--server", "s", "--repeats", "5", "--max-repeats", "4"]),
                       "compare --max-repeats 4: at least --repeats (5)")
    }

    func testHelpDocumentsEveryOptionWithDefault() {
        // Every flag of both tables, so an option added to a table and not to the help fails here.
        for option in RunOptionParser.table.rows.map(\.flag) + CompareOptionParser.table.rows.map(\.flag) {
            XCTAssertTrue(helpText.contains(option), "help lacks \(option)")
        }
        for defaultValue in ["[10]", "[1000]", "[200]", "[5]", "[constant]", "[0.5]", "[3]", "[600]", "[0.3]", "[udp]", "[shared]"] {
            XCTAssertTrue(helpText.contains(defaultValue), "help lacks default \(defaultValue)")
        }
    }
}
