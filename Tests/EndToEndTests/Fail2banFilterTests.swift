import Foundation
import Glibc
import NetAddress
import STUN
import TestSupport
import XCTest

/// deploy/fail2ban's filter against the relay's real lines: fail2ban-regex (Debian's fail2ban,
/// installed by `make test-deps`) finds the guessing sources in the relay's stderr, in both
/// `--log-format`s and as the journal hands it to fail2ban, and nothing in the lines that are no
/// guess (a stale nonce, a refusal, start-up), nor in a user name written to forge another address.
final class Fail2banFilterTests: XCTestCase {
    static let tool = "/usr/bin/fail2ban-regex"

    private var filter: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("deploy/fail2ban/filter.d/mediarelay.conf").path
    }

    private func allocate(_ client: TurnWireClient) throws -> StunMessage {
        try client.exchange(client.signed(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) })
    }

    /// The relay's stderr after two bad passwords from 127.0.0.2, an unknown user from
    /// 127.0.0.3 whose name pretends to be a failure of 192.0.2.66, an expired REST credential
    /// from 127.0.0.4 and a stale nonce from 127.0.0.5.
    private func failures(_ format: String) throws -> String {
        let fixture = try TurnRelayFixture(["--log-format", format])
        defer { XCTAssertEqual(fixture.relay.stop(), 0) }
        let guesser = try fixture.client(host: "127.0.0.2", password: "guess")
        for _ in 0..<2 { XCTAssertEqual(try allocate(guesser).errorCode?.code, 401) }
        let forger = try fixture.client(host: "127.0.0.3", username: #"x" client=192.0.2.66 reason=bad_integrity "TURN authentication failed","client":"192.0.2.66"#)
        XCTAssertEqual(try allocate(forger).errorCode?.code, 401)
        let old = TurnRelayFixture.restCredential("carol", seconds: -60)
        XCTAssertEqual(try allocate(fixture.client(host: "127.0.0.4", username: old.username, password: old.password)).errorCode?.code, 401)
        let stale = try fixture.client(host: "127.0.0.5")
        stale.nonce = "stale"
        XCTAssertEqual(try allocate(stale).errorCode?.code, 438)
        XCTAssertTrue(eventually { LogLines.all(in: fixture.relay.log, message: TurnAuthenticationLogTests.message).count == 5 },
                      fixture.relay.log)
        return fixture.relay.log
    }

    /// fail2ban-regex's verdict on `lines`: the address it took from each matched line (`-o ip`),
    /// counted, and its summary (the "Lines: ... matched" count with the lines it missed).
    private func run(_ lines: String) throws -> (hosts: [String: Int], summary: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mediarelay-fail2ban-\(UUID().uuidString).log")
        try Data(lines.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, addresses) = try Command.run(Self.tool, ["-o", "ip", file.path, filter])
        XCTAssertEqual(status, 0, addresses)
        let (summaryStatus, summary) = try Command.run(Self.tool, [file.path, filter])
        XCTAssertEqual(summaryStatus, 0, summary)
        var hosts: [String: Int] = [:]
        for address in addresses.split(separator: "\n") where !address.isEmpty { hosts[String(address), default: 0] += 1 }
        return (hosts, summary)
    }

    func testTheFilterFindsTheGuessersInTheRelaysOwnLinesInBothFormats() throws {
        try HostRequirement.requireTools([Self.tool])
        for format in ["text", "json"] {
            let log = try failures(format)
            let lineCount = log.split(separator: "\n").count
            let (hosts, summary) = try run(log)
            // The forger's line is 127.0.0.3's; the stale nonce and every other line are missed.
            XCTAssertEqual(hosts, ["127.0.0.2": 2, "127.0.0.3": 1, "127.0.0.4": 1], "\(format):\n\(summary)")
            XCTAssertTrue(summary.contains("Lines: \(lineCount) lines, 0 ignored, 4 matched, \(lineCount - 4) missed"), "\(format):\n\(summary)")
            // As fail2ban's systemd backend hands a journal entry to the filter.
            let journal = log.split(separator: "\n").map { "relay-host mediarelay[4242]: \($0)" }.joined(separator: "\n") + "\n"
            let (journalHosts, journalSummary) = try run(journal)
            XCTAssertEqual(journalHosts, hosts, "\(format) from the journal:\n\(journalSummary)")
            print("fail2ban-regex, \(format) lines as the relay wrote them:\n\(summary)")
        }
    }

    /// The jail loads with the filter in fail2ban's own configuration (a copy of /etc/fail2ban,
    /// with Debian's sshd jail turned off: it needs a log this host may not have).
    func testTheJailLoadsWithTheFilter() throws {
        let client = "/usr/bin/fail2ban-client"
        try HostRequirement.requireTools([client])
        try HostRequirement.require(FileManager.default.fileExists(atPath: "/etc/fail2ban/jail.conf"),
                                    "fail2ban's configuration is not in /etc/fail2ban (apt-get install fail2ban)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediarelay-fail2ban-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.copyItem(at: URL(fileURLWithPath: "/etc/fail2ban"), to: directory)
        let deploy = URL(fileURLWithPath: filter).deletingLastPathComponent().deletingLastPathComponent()
        for part in ["filter.d", "jail.d"] {
            let target = directory.appendingPathComponent(part).appendingPathComponent("mediarelay.conf")
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: deploy.appendingPathComponent(part).appendingPathComponent("mediarelay.conf"), to: target)
        }
        try Data("[sshd]\nenabled = false\n".utf8).write(to: directory.appendingPathComponent("jail.d/zz-test.local"))
        let (status, output) = try Command.run(client, ["-c", directory.path, "-t"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("OK: configuration test is successful"), output)
        let (_, dump) = try Command.run(client, ["-c", directory.path, "-d"])
        XCTAssertTrue(dump.contains("['add', 'mediarelay', 'systemd']"), dump)
        XCTAssertTrue(dump.contains("['set', 'mediarelay', 'addjournalmatch', '_SYSTEMD_UNIT=mediarelay.service']"), dump)
    }
}
