import Foundation
@testable import mediarelay
import NetAddress
import TestSupport
import XCTest

/// deploy/systemd/turn-tls.conf, the drop-in that turns the unit into a TURN server over UDP,
/// TCP and TLS on 443 with certbot's files: its command line runs through the relay's own
/// parser with the example config, and systemd-analyze accepts the unit with it.
final class SystemdDropInTests: XCTestCase {
    static let dropIn = repoRoot.appendingPathComponent("deploy/systemd/turn-tls.conf")
    static let unit = repoRoot.appendingPathComponent("deploy/systemd/mediarelay.service")
    static let certbotCertificate = "/etc/letsencrypt/live/turn.example.com/fullchain.pem"
    static let certbotKey = "/etc/letsencrypt/live/turn.example.com/privkey.pem"

    /// The values of `key=` in a unit file, continuation lines joined, comments left out.
    static func settings(_ key: String, in file: URL) throws -> [String] {
        var logical: [String] = []
        var pending = ""
        for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if pending.isEmpty && (trimmed.hasPrefix("#") || trimmed.hasPrefix(";")) { continue }
            if trimmed.hasSuffix("\\") {
                pending += trimmed.dropLast() + " "
            } else {
                logical.append(pending + trimmed)
                pending = ""
            }
        }
        return logical.filter { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    /// The drop-in's command, as systemd runs it: the TURN secret from the environment file,
    /// certbot's paths swapped for a CertificateFixture pair (which the relay loads while it
    /// checks its options), then parsed with the example config.json.
    func testTheCommandParsesWithCertbotsFilesAndTheExampleConfig() throws {
        let execStarts = try Self.settings("ExecStart", in: Self.dropIn)
        XCTAssertEqual(execStarts.first, "", "a drop-in must clear the unit's ExecStart before giving its own")
        let command = try XCTUnwrap(execStarts.last)
        for path in [Self.certbotCertificate, Self.certbotKey] {
            XCTAssertTrue(command.contains(path), "the drop-in no longer reads certbot's \(path)")
        }
        let certificates = try CertificateFixture()
        let words = command.replacingOccurrences(of: Self.certbotCertificate, with: certificates.chainedServer.certificate)
            .replacingOccurrences(of: Self.certbotKey, with: certificates.chainedServer.key)
            .split(separator: " ").map(String.init)
        XCTAssertEqual(words.first, "/usr/local/bin/mediarelay")

        let configPath = "/etc/mediarelay/config.json"
        let config = try Data(contentsOf: repoRoot.appendingPathComponent("deploy/systemd/config.json"))
        XCTAssertFalse(command.contains("secret"), "a secret on the command line shows in ps")
        let environment = [ServerOptions.turnSecretEnvironmentVariable: "secret-from-the-environment-file"]
        let parsed = try ServerOptions.parse(arguments: Array(words.dropFirst()), environment: environment) { path in
            guard path == configPath else { throw CocoaError(.fileNoSuchFile) }
            return config
        }
        guard case .run(let options) = parsed else { return XCTFail("not a run: \(parsed)") }
        XCTAssertEqual(options.turnListeners, [HostPort(host: "0.0.0.0", port: 3478)])
        XCTAssertEqual(options.turnTCPListeners, [HostPort(host: "0.0.0.0", port: 3478)])
        XCTAssertEqual(options.turnTLSListeners, [HostPort(host: "0.0.0.0", port: 443)])
        XCTAssertEqual(options.turnSecrets, ["secret-from-the-environment-file"])
        XCTAssertEqual(options.turnRealm, "turn.example.com")
        XCTAssertEqual(options.tlsCert, certificates.chainedServer.certificate)
    }

    /// 443 binds without root only through the unit's ambient capability (the other three are
    /// the kernel fast path's: FastPathServerTests loads it with them); the key only through
    /// the group the drop-in joins; a renewal reaches the relay only through ExecReload.
    func testTheUnitCanBind443ReadTheKeyAndReload() throws {
        XCTAssertEqual(try Self.settings("AmbientCapabilities", in: Self.unit), ["CAP_NET_BIND_SERVICE CAP_BPF CAP_NET_ADMIN CAP_PERFMON"])
        XCTAssertEqual(try Self.settings("ExecReload", in: Self.unit), ["/bin/kill -HUP $MAINPID"])
        XCTAssertEqual(try Self.settings("DynamicUser", in: Self.unit), ["yes"])
        XCTAssertEqual(try Self.settings("SupplementaryGroups", in: Self.dropIn), ["mediarelay-tls"])
        let text = try String(contentsOf: Self.dropIn, encoding: .utf8)
        XCTAssertTrue(text.contains("--deploy-hook \"systemctl reload mediarelay\""), "the drop-in no longer shows certbot's reload")
        XCTAssertTrue(text.contains("chgrp mediarelay-tls"), "the drop-in no longer shows how the key becomes readable")
    }

    /// Every TCP and TLS connection is a descriptor: the unit's limit holds the default
    /// --turn-max-connections on top of the port range and the rest (the unit's own sum).
    func testTheDescriptorLimitHoldsTheConnections() throws {
        let limit = try XCTUnwrap(try Self.settings("LimitNOFILE", in: Self.unit).last.flatMap { Int($0) })
        let options = ServerOptions()
        XCTAssertGreaterThanOrEqual(limit, options.ports.count + options.turnMaxConnections + 2048 + 512 + 100)
    }

    func testSystemdAnalyzeVerifyAcceptsTheUnitWithTheDropIn() throws {
        let systemdAnalyze = try TestToolSupport.require("systemd-analyze", install: "Debian: apt-get install systemd")
        // As DeployFilesTests does for the unit alone: verify checks that ExecStart exists.
        let executable = BuiltProducts.relay?.path ?? "/bin/true"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("unit-\(UUID().uuidString)")
        let dropIns = directory.appendingPathComponent("mediarelay.service.d")
        try FileManager.default.createDirectory(at: dropIns, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (file, copy) in [(Self.unit, directory.appendingPathComponent("mediarelay.service")),
                             (Self.dropIn, dropIns.appendingPathComponent("turn-tls.conf"))] {
            try String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: "/usr/local/bin/mediarelay", with: executable)
                .write(to: copy, atomically: true, encoding: .utf8)
        }
        let result = try Command.run(systemdAnalyze, ["verify", directory.appendingPathComponent("mediarelay.service").path])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertFalse(result.output.contains("mediarelay.service") || result.output.contains("turn-tls.conf"),
                       "warnings about the unit or the drop-in: \(result.output)")
    }
}
