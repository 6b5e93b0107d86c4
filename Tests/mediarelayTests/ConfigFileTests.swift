import Foundation
import Glibc
import NetAddress
import TestSupport
import XCTest

@testable import mediarelay

final class ConfigFileTests: XCTestCase {
    /// Every key of the contract once. `tls_cert` and `tls_key` are loaded at start, so a test
    /// that parses this gives files that load (CertificateFixture).
    func fullConfig(cert: String = "cert.pem", key: String = "key.pem") -> String {
        """
        {
          "engine": "mmsg", "gso": "off", "gro": "off", "workers": 3,
          "forward": ["127.0.0.1:7777=127.0.0.1:9000", "[::1]:7778=[::1]:9001"],
          "ports": "41000-41099", "relay_address": "::", "advertise_address": "192.0.2.1",
          "http": "0.0.0.0:9480", "control_token": "file-token", "dscp": "zero",
          "service_class": "signaling", "ecn": "clear", "ecn_marking": "off", "ecn_l4s_threshold": 10,
          "ecn_classic_threshold": 90, "ecn_backlog": "off", "ecn_backlog_l4s_threshold": 2000,
          "ecn_backlog_classic_threshold": 15000, "egress_rate": 1250000, "log_level": "warning", "log_format": "json",
          "drain_seconds": 30, "ready_threshold": 0.8, "idle_timeout_seconds": 120, "max_clients": 50,
          "max_sessions": 60, "batch_size": 32, "max_datagram_size": 1500, "free_bind": "on",
          "turn": ["127.0.0.1:3478", "[::1]:3478"], "turn_realm": "example.org",
          "turn_user": ["alice:pw1"], "turn_users_file": "users.txt", "turn_secret": ["old", "new"],
          "turn_secret_file": "secrets.txt", "turn_nonce_secret": ["fleet-nonce"],
          "turn_allowed_peer": ["127.0.0.0/8"], "turn_denied_peer": ["127.0.0.9/32", "::1"],
          "turn_max_allocations": 70, "turn_max_allocations_per_user": 4, "turn_bandwidth": 125000,
          "turn_port_share": 25, "turn_max_channels": 32, "turn_unauthenticated_rate": 0,
          "turn_alternates": ["127.0.0.2:3478", "tls:[::1]:5349"], "turn_alternate_domain": "turn.example.org",
          "turn_tcp": ["127.0.0.1:3478", "[::1]:3479"], "turn_tls": ["127.0.0.1:5349"],
          "tls_cert": "\(cert)", "tls_key": "\(key)",
          "turn_max_connections": 2000, "turn_max_connections_per_source": 20,
          "fast_path": "xdp", "fast_path_interfaces": ["eth0", "eth1"]
        }
        """
    }
    let usersFile = "# static users\nbob:pw:2\n"
    let secretsFile = "newest\n"

    func testEveryKeyIsRead() throws {
        let certificates = try CertificateFixture()
        let config = fullConfig(cert: certificates.server.certificate, key: certificates.server.key)
        guard let options = runOptions(["--config", "c.json"], files: ["c.json": config, "users.txt": usersFile,
                                                                            "secrets.txt": secretsFile]) else { return }
        XCTAssertEqual(options.configPath, "c.json")
        XCTAssertEqual(options.engine, .mmsg)
        XCTAssertFalse(options.gso)
        XCTAssertFalse(options.gro)
        XCTAssertEqual(options.workers, 3)
        XCTAssertEqual(options.forwards.map(\.description), ["127.0.0.1:7777=127.0.0.1:9000", "[::1]:7778=[::1]:9001"])
        XCTAssertEqual(options.ports, PortRange(low: 41000, high: 41099))
        XCTAssertEqual(options.relayAddress, "::")
        XCTAssertEqual(options.advertiseAddress, "192.0.2.1")
        XCTAssertEqual(options.http, HostPort(host: "0.0.0.0", port: 9480))
        XCTAssertEqual(options.controlToken, "file-token")
        XCTAssertEqual(options.dscp, .zero)
        XCTAssertFalse(options.ecnMarking)
        XCTAssertEqual(options.ecnL4SThreshold, 10)
        XCTAssertEqual(options.ecnClassicThreshold, 90)
        XCTAssertFalse(options.ecnBacklog)
        XCTAssertEqual(options.ecnBacklogL4SThreshold, 2000)
        XCTAssertEqual(options.ecnBacklogClassicThreshold, 15000)
        XCTAssertEqual(options.egressRate, 1_250_000)
        XCTAssertEqual(options.serviceClass, .signaling)
        XCTAssertEqual(options.ecn, .clear)
        XCTAssertEqual(options.logLevel, .warning)
        XCTAssertEqual(options.logFormat, .json)
        XCTAssertEqual(options.drainSeconds, 30)
        XCTAssertEqual(options.readyThreshold, 0.8)
        XCTAssertEqual(options.idleTimeoutSeconds, 120)
        XCTAssertEqual(options.maxClients, 50)
        XCTAssertEqual(options.maxSessions, 60)
        XCTAssertEqual(options.batchSize, 32)
        XCTAssertEqual(options.maxDatagramSize, 1500)
        XCTAssertEqual(options.turnListeners, [HostPort(host: "127.0.0.1", port: 3478), HostPort(host: "::1", port: 3478)])
        XCTAssertEqual(options.turnRealm, "example.org")
        XCTAssertEqual(options.turnUsers, [TURNUser(name: "alice", password: "pw1"), TURNUser(name: "bob", password: "pw:2")])
        XCTAssertEqual(options.turnUsersFile, "users.txt")
        XCTAssertEqual(options.turnSecrets, ["old", "new", "newest"], "the file's secrets after the key's")
        XCTAssertEqual(options.turnNonceSecrets, ["fleet-nonce"])
        XCTAssertEqual(options.turnAllowedPeers.map(\.text), ["127.0.0.0/8"])
        XCTAssertEqual(options.turnDeniedPeers.map(\.text), ["127.0.0.9/32", "::1"])
        XCTAssertEqual(options.turnMaxAllocations, 70)
        XCTAssertEqual(options.turnMaxAllocationsPerUser, 4)
        XCTAssertEqual(options.turnBandwidth, 125000)
        XCTAssertEqual(options.turnPortShare, 25)
        XCTAssertEqual(options.turnMaxChannels, 32)
        XCTAssertEqual(options.turnUnauthenticatedRate, 0)
        XCTAssertEqual(options.turnAlternates.map(\.description), ["127.0.0.2:3478", "tls:[::1]:5349"])
        XCTAssertEqual(options.turnAlternateDomain, "turn.example.org")
        XCTAssertEqual(options.turnTCPListeners, [HostPort(host: "127.0.0.1", port: 3478), HostPort(host: "::1", port: 3479)])
        XCTAssertEqual(options.turnTLSListeners, [HostPort(host: "127.0.0.1", port: 5349)])
        XCTAssertEqual(options.tlsCert, certificates.server.certificate)
        XCTAssertEqual(options.tlsKey, certificates.server.key)
        XCTAssertEqual(options.turnMaxConnections, 2000)
        XCTAssertEqual(options.turnMaxConnectionsPerSource, 20)
        XCTAssertEqual(options.fastPath, .xdp)
        XCTAssertEqual(options.fastPathInterfaces, ["eth0", "eth1"])
    }

    func testEveryConfigKeyOfTheContractIsKnown() {
        let contractKeys = [
            "engine", "gso", "gro", "workers", "forward", "ports", "relay_address", "advertise_address", "http",
            "control_token", "dscp", "service_class", "ecn", "ecn_marking", "ecn_l4s_threshold", "ecn_classic_threshold",
            "ecn_backlog", "ecn_backlog_l4s_threshold", "ecn_backlog_classic_threshold",
            "log_level", "log_format", "drain_seconds", "ready_threshold", "idle_timeout_seconds", "max_clients", "max_sessions", "batch_size",
            "max_datagram_size", "egress_rate", "free_bind", "turn", "turn_realm",
            "turn_user", "turn_users_file", "turn_secret", "turn_secret_file", "turn_nonce_secret", "turn_allowed_peer", "turn_denied_peer",
            "turn_max_allocations", "turn_max_allocations_per_user", "turn_bandwidth", "turn_port_share",
            "turn_max_channels", "turn_unauthenticated_rate", "turn_alternates", "turn_alternate_domain",
            "turn_tcp", "turn_tls", "tls_cert", "tls_key", "turn_max_connections", "turn_max_connections_per_source",
            "fast_path", "fast_path_interfaces",
        ]
        XCTAssertEqual(OptionKey.allCases.map(\.configKey), contractKeys)
        for key in contractKeys {
            XCTAssertTrue(fullConfig().contains("\"\(key)\""), "the full config test does not cover \(key)")
        }
    }

    func testFlagsWinOverTheFile() throws {
        let certificates = try CertificateFixture()
        let config = fullConfig(cert: certificates.server.certificate, key: certificates.server.key)
        guard let options = runOptions(
            ["--engine=uring", "--config", "c.json", "--workers", "1", "--forward", "127.0.0.1:1=127.0.0.1:2", "--control-token", "flag"],
            environment: ["MEDIARELAY_CONTROL_TOKEN": "env"], files: ["c.json": config, "users.txt": usersFile, "secrets.txt": secretsFile]
        ) else { return }
        XCTAssertEqual(options.engine, .uring)
        XCTAssertEqual(options.workers, 1)
        XCTAssertEqual(options.forwards.map(\.description), ["127.0.0.1:1=127.0.0.1:2"], "flags replace the file's rules")
        XCTAssertEqual(options.controlToken, "flag")
        XCTAssertEqual(options.batchSize, 32, "keys without a flag still come from the file")
    }

    func testFileTokenWinsOverTheEnvironment() {
        let files = ["c.json": #"{"control_token": "file"}"#]
        XCTAssertEqual(runOptions(["--config", "c.json"], environment: ["MEDIARELAY_CONTROL_TOKEN": "env"], files: files)?.controlToken, "file")
    }

    func testNonLoopbackHTTPFromTheFileNeedsAToken() {
        let files = ["c.json": #"{"http": "0.0.0.0:9480"}"#]
        refusal(["--config", "c.json"], files: files, mentions: [#"config c.json: key "http": 0.0.0.0:9480"#, "control token"])
        XCTAssertNotNil(runOptions(["--config", "c.json"], environment: ["MEDIARELAY_CONTROL_TOKEN": "e"], files: files))
        XCTAssertNotNil(runOptions(["--config", "c.json", "--http", "127.0.0.1:1"], files: files))
    }

    func testBadKeysAreNamed() {
        let cases: [(String, [String])] = [
            (#"{"engine": "foo"}"#, [#"key "engine": foo: expected one of auto, perpacket, mmsg, uring"#]),
            (#"{"engnie": "uring"}"#, [#"key "engnie": unknown key; did you mean "engine"?"#]),
            (#"{"workers": "4"}"#, [#"key "workers": expected an integer"#, "got a string"]),
            (#"{"workers": 1.5}"#, [#"key "workers": expected an integer"#, "got a number"]),
            (#"{"workers": true}"#, [#"key "workers": expected an integer"#, "got a boolean"]),
            (#"{"workers": 0}"#, [#"key "workers": 0: expected an integer in 1...256"#]),
            (#"{"gso": false}"#, [#"key "gso": expected a string"#, "got a boolean"]),
            (#"{"engine": null}"#, [#"key "engine": expected a string"#, "got null"]),
            (#"{"forward": "127.0.0.1:1=127.0.0.1:2"}"#, [#"key "forward": expected an array of strings"#]),
            (#"{"forward": [1]}"#, [#"key "forward": expected an array of strings"#]),
            (#"{"forward": ["nope"]}"#, [#"key "forward": nope: expected LISTEN=UPSTREAM"#]),
            (#"{"ports": "9-1"}"#, [#"key "ports": 9-1: expected LOW-HIGH"#]),
            (#"{"http": "localhost:80"}"#, [#"key "http": localhost:80:"#]),
            (#"{"control_token": "a b"}"#, [#"key "control_token": (value hidden): expected"#]),
            (#"{"idle_timeout_seconds": 0}"#, [#"key "idle_timeout_seconds": 0:"#]),
            (#"{"fast_path": "on"}"#, [#"key "fast_path": on: expected one of off, auto, tc, xdp"#]),
            (#"{"fast_path_interfaces": "eth0"}"#, [#"key "fast_path_interfaces": expected an array of strings"#]),
            (#"{"fast_path_interfaces": ["eth/0"]}"#, [#"key "fast_path_interfaces": eth/0: expected an interface name"#]),
            (#"{"fast_path_interface": ["eth0"]}"#, [#"key "fast_path_interface": unknown key"#]),
        ]
        for (text, mentions) in cases {
            refusal(["--config", "c.json"], files: ["c.json": text], mentions: ["mediarelay: config c.json: "] + mentions)
        }
    }

    func testBadFilesAreNamed() {
        refusal(["--config", "missing.json"], mentions: ["config missing.json:", "cannot read"])
        refusal(["--config", "c.json"], files: ["c.json": "{\"engine\": "], mentions: ["config c.json:", "not valid JSON"])
        refusal(["--config", "c.json"], files: ["c.json": "[1, 2]"], mentions: ["config c.json:", "JSON object", "an array"])
        refusal(["--config", "c.json"], files: ["c.json": ""], mentions: ["config c.json:", "not valid JSON"])
    }

    /// JSONDecoder said "The given data was not valid JSON" with Foundation's own wording; the
    /// package's reader says where and what it expected.
    func testNotJSONSaysWhereAndWhy() {
        refusal(["--config", "c.json"], files: ["c.json": "{\n  \"engine\": \"mmsg\",\n  \"workers\": 2,\n}"],
                mentions: ["mediarelay: config c.json: not valid JSON (line 4, column 1: expected a string key after ',', found '}')"])
        refusal(["--config", "c.json"], files: ["c.json": "{\"engine\": \"mmsg\"} trailing"],
                mentions: ["not valid JSON (line 1, column 20: unexpected 't' after the JSON value"])
        refusal(["--config", "c.json"], files: ["c.json": String(repeating: "[", count: 100)],
                mentions: ["not valid JSON (line 1, column 65: nesting deeper than 64 levels)"])
        refusal(["--config", "c.json"], files: ["c.json": #"{"workers": 2.0}"#],
                mentions: [#"key "workers": expected an integer"#, "got a number with a fraction or exponent (2.0)"])
    }

    func testAbsurdSizesAreRefused() {
        let big = "{\"engine\": \"auto\"" + String(repeating: " ", count: 1 << 20) + "}"
        refusal(["--config", "c.json"], files: ["c.json": big], mentions: ["config c.json:", "larger than 1 MiB"])
        let rules = (0..<257).map { "\"127.0.0.1:\(1000 + $0)=127.0.0.1:9000\"" }.joined(separator: ",")
        refusal(["--config", "c.json"], files: ["c.json": "{\"forward\": [\(rules)]}"], mentions: [#"key "forward""#, "at most 256"])
    }

    func testTheDefaultReaderStopsAtTheLimit() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mediarelay-config-\(getpid()).json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data(count: ConfigFile.maxBytes + 4096).write(to: url)
        XCTAssertEqual(try ConfigFile.read(url.path).count, ConfigFile.maxBytes + 1)
        do {
            _ = try ServerOptions.parse(arguments: ["--config", url.path], environment: [:])
            XCTFail("a 1 MiB + 4 KiB file was accepted")
        } catch {
            XCTAssertTrue(error.description.contains("larger than 1 MiB"), error.description)
        }
        // /dev/zero never ends: it is refused by its type, before a byte is read.
        XCTAssertThrowsError(try ConfigFile.read("/dev/zero")) { error in
            XCTAssertEqual("\(error)", "is a character device, not a regular file")
        }
    }

    /// A FIFO would block the read until a writer came (start-up hung with no output); a
    /// directory gave "NSCocoaErrorDomain error 256". Both are now named for what they are.
    func testFIFOsAndDirectoriesAreRefusedByTheirType() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediarelay-config-dir-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo.json").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0, String(cString: strerror(errno)))
        for (path, kind) in [(fifo, "is a FIFO (named pipe), not a regular file"), (directory.path, "is a directory, not a regular file")] {
            do {
                _ = try ServerOptions.parse(arguments: ["--config", path], environment: [:])
                XCTFail("\(path) was accepted")
            } catch {
                XCTAssertEqual(error.description, "mediarelay: config \(path): \(kind); expected a readable JSON file")
                XCTAssertEqual(error.exitCode, 2)
            }
        }
    }

    func testReadErrorsAreInWordsNotCocoaDomains() throws {
        do {
            _ = try ServerOptions.parse(arguments: ["--config", "/nonexistent/mediarelay.json"], environment: [:])
            XCTFail("a missing file was accepted")
        } catch {
            XCTAssertTrue(error.description.contains("ENOENT"), error.description)
            XCTAssertTrue(error.description.lowercased().contains("no such file or directory"), error.description)
            XCTAssertFalse(error.description.contains("Cocoa"), error.description)
        }
    }

    /// Decoding kept the first of two equal keys without a word.
    func testDuplicateKeysAreRefusedByName() {
        refusal(["--config", "c.json"], files: ["c.json": #"{"workers": 2, "engine": "mmsg", "workers": 3}"#],
                mentions: [#"config c.json: key "workers""#, "more than once"])
        refusal(["--config", "c.json"], files: ["c.json": #"{"log_level": "info", "log\u005flevel": "debug"}"#],
                mentions: [#"key "log_level""#, "more than once"])
        XCTAssertNotNil(runOptions(["--config", "c.json"], files: ["c.json": #"{"forward": ["127.0.0.1:1=127.0.0.1:2"], "workers": 2}"#]))
    }

    func testTheShippedExampleConfigParses() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("deploy/systemd/config.json").path
        XCTAssertNotNil(runOptions(["--config", path], files: [path: try String(contentsOfFile: path, encoding: .utf8)]))
    }

    /// Relative paths in the file resolved against the directory the relay was started in.
    func testARelativePathInTheFileIsInTheFilesDirectory() {
        let config = #"{"turn": ["127.0.0.1:3478"], "turn_users_file": "users.txt", "turn_secret_file": "../s"}"#
        let options = runOptions(["--config", "/etc/mr/c.json"], files: ["/etc/mr/c.json": config, "/etc/mr/users.txt": "a:b\n",
                                                                         "/etc/mr/../s": "s\n"])
        XCTAssertEqual(options?.turnUsersFile, "/etc/mr/users.txt")
        XCTAssertEqual(options?.turnSecretFile, "/etc/mr/../s")
        let flags = runOptions(["--config", "/etc/mr/c.json", "--turn-users-file", "users.txt"],
                               files: ["/etc/mr/c.json": config, "users.txt": "a:b\n", "/etc/mr/../s": "s\n"])
        XCTAssertEqual(flags?.turnUsersFile, "users.txt", "a flag's path is the working directory's, as a shell's")
    }

    /// Errors found after merging named the flag, though the value came from the file.
    func testAnErrorAboutAValueFromTheFileNamesItsKey() {
        let config = #"{"turn": ["127.0.0.1:3478"], "turn_users_file": "/missing/users"}"#
        let error = refusal(["--config", "c.json"], files: ["c.json": config],
                            mentions: [#"mediarelay: config c.json: key "turn_users_file": /missing/users: cannot read it"#])
        XCTAssertFalse(error?.description.contains("--turn-users-file") ?? true, error?.description ?? "")
        refusal(["--config", "c.json", "--turn-users-file", "/missing/users"], files: ["c.json": config],
                mentions: ["mediarelay: --turn-users-file /missing/users: cannot read it"])
    }

    /// An unknown key listed all the known ones on one line, with no guess.
    func testAMistypedKeyGetsAGuessNotAListOfEveryKey() {
        for (typed, meant) in [("relay-address", "relay_address"), ("--turn-secret", "turn_secret"), ("max_sesions", "max_sessions"),
                               ("turn_alternate", "turn_alternates")] {
            let error = refusal(["--config", "c.json"], files: ["c.json": "{\"\(typed)\": 1}"],
                                mentions: ["unknown key; did you mean \"\(meant)\"?", "--help lists every key"])
            XCTAssertFalse(error?.description.contains("idle_timeout_seconds") ?? true)
        }
        let far = refusal(["--config", "c.json"], files: ["c.json": #"{"colour": 1}"#], mentions: ["unknown key; mediarelay --help"])
        XCTAssertFalse(far?.description.contains("did you mean") ?? true, far?.description ?? "")
    }
}
