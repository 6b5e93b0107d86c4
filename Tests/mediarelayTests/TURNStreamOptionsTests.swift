import NetAddress
import TestSupport
import XCTest

@testable import mediarelay

/// The options of TURN over TCP and TLS. OptionsTests and TURNOptionsTests leave them to this
/// file: the certificate options need a TLS listener, and a TLS listener a pair that loads.
let streamTURNFlags: Set<String> = [
    "--turn-tcp", "--turn-tls", "--tls-cert", "--tls-key", "--turn-max-connections", "--turn-max-connections-per-source",
]

/// TURN over TCP and TLS: the listeners (IPv4 and `[v6]:port`), the certificate and key (loaded
/// while the options are checked, so a bad pair stops start-up, or a reload, with one line that
/// names the file), the connection limits, the checks across options, and what SIGHUP does with
/// each.
final class TURNStreamOptionsTests: XCTestCase {
    /// Credentials, and the address relayed addresses are advertised at beside the wildcard
    /// listeners some cases use.
    let secret = ["--turn-secret", "s", "--advertise-address", "203.0.113.1"]

    /// `--flag value` pairs respelled `--flag=value`, the other spelling the parser takes.
    private func joined(_ arguments: [String]) -> [String] {
        stride(from: 0, to: arguments.count, by: 2).map { "\(arguments[$0])=\(arguments[$0 + 1])" }
    }

    private func tls(_ server: CertificateFixture.Server, listener: String = "127.0.0.1:5349") -> [String] {
        ["--turn-tls", listener, "--tls-cert", server.certificate, "--tls-key", server.key]
    }

    func testTheDefaults() {
        guard let options = runOptions([]) else { return }
        XCTAssertEqual(options.turnTCPListeners, [])
        XCTAssertEqual(options.turnTLSListeners, [])
        XCTAssertNil(options.tlsCert)
        XCTAssertNil(options.tlsKey)
        XCTAssertEqual(options.turnMaxConnections, 10000)
        XCTAssertEqual(options.turnMaxConnectionsPerSource, 500)
        XCTAssertFalse(options.servesTURN)
    }

    func testEveryStreamOptionAcceptsAGoodValueInBothSpellings() throws {
        let certificates = try CertificateFixture()
        let server = certificates.server
        let tcp = secret + ["--turn-tcp", "127.0.0.1:3478"]
        let good: [(flag: String, arguments: [String], check: (ServerOptions) -> Bool)] = [
            ("--turn-tcp", secret + ["--turn-tcp", "0.0.0.0:3478"], { $0.turnTCPListeners == [HostPort(host: "0.0.0.0", port: 3478)] }),
            ("--turn-tcp", secret + ["--turn-tcp", "[::]:3478", "--turn-tcp", "[2001:db8::1]:80"], {
                $0.turnTCPListeners == [HostPort(host: "::", port: 3478), HostPort(host: "2001:db8::1", port: 80)]
            }),
            ("--turn-tls", secret + tls(server, listener: "0.0.0.0:443"), { $0.turnTLSListeners == [HostPort(host: "0.0.0.0", port: 443)] }),
            ("--turn-tls", secret + tls(server, listener: "[::1]:5349"), { $0.turnTLSListeners == [HostPort(host: "::1", port: 5349)] }),
            ("--tls-cert", secret + tls(server), { $0.tlsCert == server.certificate && $0.tlsKey == server.key }),
            // The chain after the leaf, as certbot's fullchain.pem has it.
            ("--tls-cert", secret + tls(certificates.chainedServer), { $0.tlsCert == certificates.chainedServer.certificate }),
            ("--tls-key", secret + tls(certificates.secondServer), { $0.tlsKey == certificates.secondServer.key }),
            ("--turn-max-connections", tcp + ["--turn-max-connections", "1"], { $0.turnMaxConnections == 1 }),
            ("--turn-max-connections", tcp + ["--turn-max-connections", "1000000"], { $0.turnMaxConnections == 1_000_000 }),
            ("--turn-max-connections-per-source", tcp + ["--turn-max-connections-per-source", "1"], { $0.turnMaxConnectionsPerSource == 1 }),
            ("--turn-max-connections-per-source", tcp + ["--turn-max-connections-per-source", "1000000"], {
                $0.turnMaxConnectionsPerSource == 1_000_000
            }),
        ]
        for (_, arguments, check) in good {
            for spelling in [arguments, joined(arguments)] {
                guard let options = runOptions(spelling) else { continue }
                XCTAssertTrue(check(options), "\(spelling) did not take effect")
                XCTAssertTrue(options.servesTURN, "\(spelling)")
            }
        }
        XCTAssertEqual(Set(good.map(\.flag)), streamTURNFlags, "a stream option has no good-value case")
        XCTAssertEqual(streamTURNFlags, Set(OptionKey.allCases.map(\.flag)).intersection(streamTURNFlags), "a stream flag the parser does not know")
    }

    func testEveryStreamOptionRefusesABadValueWithOneLineNamingIt() {
        let bad: [(String, String, String)] = [
            ("--turn-tcp", "localhost:3478", "IP literal"),
            ("--turn-tcp", "127.0.0.1:0", "PORT in 1...65535"),
            ("--turn-tcp", "::1:3478", "[IPV6]:PORT"),
            ("--turn-tcp", "127.0.0.1", "HOST:PORT"),
            ("--turn-tls", "turn.example.com:443", "IP literal"),
            ("--turn-tls", "[::1]:65536", "PORT in 1...65535"),
            ("--turn-tls", "[127.0.0.1]:443", "[IPV6]:PORT"),
            ("--tls-cert", "", "a readable PEM file: the server's certificate, then its chain"),
            ("--tls-key", "", "a readable PEM file: the private key"),
            ("--turn-max-connections", "0", "1...1000000"),
            ("--turn-max-connections", "1000001", "1...1000000"),
            ("--turn-max-connections", "10k", "1...1000000"),
            ("--turn-max-connections-per-source", "0", "1...1000000"),
            ("--turn-max-connections-per-source", "-1", "1...1000000"),
        ]
        for (flag, value, expected) in bad {
            // An empty value is named as empty, after the flag alone.
            let shown = value.isEmpty ? "\(flag): empty value" : "\(flag) \(value):"
            refusal(secret + ["--turn-tcp", "127.0.0.2:3478", flag, value], mentions: [shown, expected])
            refusal(secret + ["--turn-tcp", "127.0.0.2:3478", "\(flag)=\(value)"], mentions: [shown, expected])
        }
        XCTAssertEqual(Set(bad.map(\.0)), streamTURNFlags, "a stream option has no bad-value case")
        let many = (0..<65).flatMap { ["--turn-tls", "127.0.1.\($0 + 1):443"] }
        refusal(secret + many, mentions: ["--turn-tls", "at most 64"])
    }

    func testTheConfigKeysAndFlagsOverThem() throws {
        let certificates = try CertificateFixture()
        let file = """
            {"turn_tcp": ["127.0.0.1:3478", "[::1]:3478"], "turn_tls": ["0.0.0.0:443", "[::]:443"],
             "tls_cert": "\(certificates.server.certificate)", "tls_key": "\(certificates.server.key)",
             "turn_max_connections": 300, "turn_max_connections_per_source": 30, "turn_secret": ["s"],
             "advertise_address": "203.0.113.1"}
            """
        guard let options = runOptions(["--config", "c.json"], files: ["c.json": file]) else { return }
        XCTAssertEqual(options.turnTCPListeners, [HostPort(host: "127.0.0.1", port: 3478), HostPort(host: "::1", port: 3478)])
        XCTAssertEqual(options.turnTLSListeners, [HostPort(host: "0.0.0.0", port: 443), HostPort(host: "::", port: 443)])
        XCTAssertEqual(options.tlsCert, certificates.server.certificate)
        XCTAssertEqual(options.tlsKey, certificates.server.key)
        XCTAssertEqual(options.turnMaxConnections, 300)
        XCTAssertEqual(options.turnMaxConnectionsPerSource, 30)
        XCTAssertEqual(options.turnListeners, [], "no UDP listener unless asked for")

        // Flags win: a list replaces the file's, a single value takes its place.
        let flagged = runOptions(["--config", "c.json", "--turn-tcp", "127.0.0.2:3478", "--tls-key", certificates.server.key,
                                  "--turn-max-connections", "400"], files: ["c.json": file])
        XCTAssertEqual(flagged?.turnTCPListeners, [HostPort(host: "127.0.0.2", port: 3478)])
        XCTAssertEqual(flagged?.turnTLSListeners.count, 2, "a list without a flag comes from the file")
        XCTAssertEqual(flagged?.turnMaxConnections, 400)

        refusal(["--config", "c.json"], files: ["c.json": #"{"turn_tcp": "127.0.0.1:3478", "turn_secret": ["s"]}"#],
                mentions: [#"config c.json: key "turn_tcp""#, "expected an array of strings"])
        refusal(["--config", "c.json"], files: ["c.json": #"{"turn_tls": [443], "turn_secret": ["s"]}"#],
                mentions: [#"key "turn_tls""#, "expected an array of strings, found"])
        refusal(["--config", "c.json"], files: ["c.json": #"{"turn_tcp": ["127.0.0.1:3478"], "turn_secret": ["s"], "turn_max_connections": "9"}"#],
                mentions: [#"key "turn_max_connections""#, "expected an integer"])
        refusal(["--config", "c.json"], files: ["c.json": #"{"turn_tcp": ["127.0.0.1:3478"], "turn_secret": ["s"], "turn_max_connections_per_source": 0}"#],
                mentions: [#"key "turn_max_connections_per_source": 0:"#, "1...1000000"])
    }

    /// TLS alone is a complete TURN server for clients that reach only port 443.
    func testATLSListenerAloneIsATURNServer() throws {
        let certificates = try CertificateFixture()
        guard let options = runOptions(secret + tls(certificates.server, listener: "0.0.0.0:443")) else { return }
        XCTAssertEqual(options.turnListeners, [])
        XCTAssertEqual(options.turnTCPListeners, [])
        XCTAssertTrue(options.servesTURN)
        // Credentials are needed whichever listener is the only one.
        refusal(tls(certificates.server), mentions: ["--turn-tls 127.0.0.1:5349:", "needs credentials", "open relay"])
        refusal(["--turn-tcp", "[::1]:3478"], mentions: ["--turn-tcp [::1]:3478:", "needs credentials"])
    }

    func testATLSListenerNeedsACertificateAndAKey() throws {
        let certificates = try CertificateFixture()
        let needs = "needs --tls-cert FILE and --tls-key FILE"
        refusal(secret + ["--turn-tls", "127.0.0.1:5349"], mentions: ["--turn-tls 127.0.0.1:5349:", needs])
        refusal(secret + ["--turn-tls", "127.0.0.1:5349", "--tls-cert", certificates.server.certificate],
                mentions: ["--turn-tls 127.0.0.1:5349:", needs])
        refusal(secret + ["--turn-tls", "[::1]:443", "--tls-key", certificates.server.key], mentions: ["--turn-tls [::1]:443:", needs])
    }

    /// A certificate or key that would not load stops start-up with one line naming that file,
    /// before any socket is bound.
    func testABadCertificateOrKeyStopsWithOneLineNamingTheFile() throws {
        let c = try CertificateFixture()
        let cases: [(cert: String, key: String, expected: String)] = [
            (c.missingFile, c.server.key, "TLS certificate file \(c.missingFile) cannot be read"),
            (c.garbageFile, c.server.key, "TLS certificate file \(c.garbageFile) holds no PEM certificate"),
            // A key where the certificate belongs is no certificate either.
            (c.server.key, c.server.key, "TLS certificate file \(c.server.key) holds no PEM certificate"),
            (c.server.certificate, c.missingFile, "TLS key file \(c.missingFile) cannot be read"),
            (c.server.certificate, c.garbageFile, "TLS key file \(c.garbageFile) holds no PEM private key"),
            (c.server.certificate, c.mismatchedKey, "TLS key file \(c.mismatchedKey) does not match the certificate in \(c.server.certificate)"),
            (c.server.certificate, c.secondServer.key, "TLS key file \(c.secondServer.key) does not match"),
        ]
        for (cert, key, expected) in cases {
            let arguments = secret + ["--turn-tls", "127.0.0.1:5349", "--tls-cert", cert, "--tls-key", key]
            refusal(arguments, mentions: ["--tls-cert \(OptionError.quoted(cert))", expected])
            // The same from a config file: the file and the key name come with it.
            let file = #"{"turn_tls": ["127.0.0.1:5349"], "turn_secret": ["s"], "tls_cert": "\#(cert)", "tls_key": "\#(key)"}"#
            refusal(["--config", "c.json"], files: ["c.json": file], mentions: [expected])
        }
    }

    func testACertificateWithoutATLSListenerIsRefused() throws {
        let certificates = try CertificateFixture()
        let tcp = secret + ["--turn-tcp", "127.0.0.1:3478"]
        refusal(tcp + ["--tls-cert", certificates.server.certificate, "--tls-key", certificates.server.key],
                mentions: ["--tls-cert \(OptionError.quoted(certificates.server.certificate)):", "does nothing without --turn-tls HOST:PORT"])
        refusal(tcp + ["--tls-key", certificates.server.key],
                mentions: ["--tls-key \(OptionError.quoted(certificates.server.key)):", "does nothing without --turn-tls HOST:PORT"])
        // Not even read: a path that does not exist is refused for the missing listener.
        refusal(["--tls-cert", "/nonexistent/fullchain.pem"], mentions: ["--tls-cert /nonexistent/fullchain.pem:", "does nothing without --turn-tls"])
    }

    /// One TCP port, one purpose: the TURN listeners over TCP and TLS and the HTTP listener.
    /// UDP and TCP ports are apart, so `--turn` and `--turn-tcp` share 3478 as coturn does.
    func testEachTCPPortServesOnePurpose() throws {
        let certificates = try CertificateFixture()
        refusal(secret + ["--turn-tcp", "127.0.0.1:9480"], mentions: ["--turn-tcp 127.0.0.1:9480:", "is also --http's address"])
        refusal(secret + ["--http", "[::1]:8080"] + tls(certificates.server, listener: "[::1]:8080"),
                mentions: ["--turn-tls [::1]:8080:", "is also --http's address"])
        refusal(secret + ["--turn-tcp", "127.0.0.1:3478"] + tls(certificates.server, listener: "127.0.0.1:3478"),
                mentions: ["--turn-tls 127.0.0.1:3478:", "is also --turn-tcp's address", "each TCP port serves one purpose"])
        refusal(secret + ["--turn-tcp", "127.0.0.1:3478", "--turn-tcp", "127.0.0.1:3478"], mentions: ["--turn-tcp 127.0.0.1:3478:", "given twice"])
        let shared = runOptions(secret + ["--turn", "0.0.0.0:3478", "--turn-tcp", "0.0.0.0:3478"] + tls(certificates.server, listener: "0.0.0.0:443"))
        XCTAssertEqual(shared?.turnListeners, [HostPort(host: "0.0.0.0", port: 3478)])
        XCTAssertEqual(shared?.turnTCPListeners, [HostPort(host: "0.0.0.0", port: 3478)])
    }

    /// SIGHUP re-reads the certificate and key (a certbot renewal); listeners and the limits the
    /// engines reserved room for need a restart.
    func testOnReloadTheCertificateChangesAndTheListenersWaitForARestart() throws {
        XCTAssertTrue(OptionKey.tlsCert.isReloadable)
        XCTAssertTrue(OptionKey.tlsKey.isReloadable)
        for key in [OptionKey.turnTCP, .turnTLS, .turnMaxConnections, .turnMaxConnectionsPerSource] {
            XCTAssertFalse(key.isReloadable, key.configKey)
        }
        let c = try CertificateFixture()
        func config(_ server: CertificateFixture.Server, tcp: String = "127.0.0.1:3478", max: Int = 100) -> String {
            #"{"turn_tcp": ["\#(tcp)"], "turn_tls": ["127.0.0.1:5349"], "turn_secret": ["s"], "tls_cert": "\#(server.certificate)", "tls_key": "\#(server.key)", "turn_max_connections": \#(max)}"#
        }
        let running = try XCTUnwrap(runOptions(["--config", "c.json"], files: ["c.json": config(c.server)]))

        let renewed = try XCTUnwrap(runOptions(["--config", "c.json"], files: ["c.json": config(c.secondServer)]))
        let renewal = ConfigReload(running: running, reloaded: renewed)
        XCTAssertEqual(renewal.applied, [.tlsCert, .tlsKey])
        XCTAssertEqual(renewal.needsRestart, [])
        XCTAssertEqual(renewal.running.tlsCert, c.secondServer.certificate)
        XCTAssertEqual(renewal.running.tlsKey, c.secondServer.key)
        XCTAssertTrue(renewal.summary.contains("(new TLS connections)"), renewal.summary)

        let moved = try XCTUnwrap(runOptions(["--config", "c.json"], files: ["c.json": config(c.server, tcp: "127.0.0.1:3479", max: 200)]))
        let restart = ConfigReload(running: running, reloaded: moved)
        XCTAssertEqual(restart.applied, [])
        XCTAssertEqual(restart.needsRestart, [.turnTCP, .turnMaxConnections])
        XCTAssertEqual(restart.running.turnTCPListeners, running.turnTCPListeners, "the running listener stays until a restart")
        XCTAssertEqual(restart.running.turnMaxConnections, 100)
        XCTAssertTrue(restart.summary.contains("needs a restart to take effect: turn_tcp (running 127.0.0.1:3478), turn_max_connections (running 100)"),
                      restart.summary)

        // A renewal that went wrong does not parse, so the reload keeps the running pair whole.
        let half = #"{"turn_tcp": ["127.0.0.1:3478"], "turn_tls": ["127.0.0.1:5349"], "turn_secret": ["s"], "tls_cert": "\#(c.secondServer.certificate)", "tls_key": "\#(c.server.key)"}"#
        refusal(["--config", "c.json"], files: ["c.json": half], mentions: ["TLS key file \(c.server.key) does not match"])
    }
}
