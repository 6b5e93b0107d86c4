import TestSupport
import XCTest

@testable import mediarelay

final class ConfigReloadTests: XCTestCase {
    /// Every key differs between these two, so each one's fate on reload is checked. The
    /// certificates are loaded at parse time, so each side names a pair that loads.
    private func before(_ tls: CertificateFixture.Server) -> String {
        """
        {"engine": "mmsg", "gso": "off", "gro": "off", "workers": 3, "forward": ["127.0.0.1:7777=127.0.0.1:9000"],
         "ports": "41000-41099", "relay_address": "::", "advertise_address": "192.0.2.1", "http": "0.0.0.0:9480",
         "control_token": "old-token", "dscp": "zero", "service_class": "signaling", "ecn": "clear",
         "ecn_marking": "on", "ecn_l4s_threshold": 20, "ecn_classic_threshold": 40, "ecn_backlog": "on",
         "ecn_backlog_l4s_threshold": 1000, "ecn_backlog_classic_threshold": 5000,
         "log_level": "warning", "log_format": "text", "drain_seconds": 30, "idle_timeout_seconds": 120, "max_clients": 50,
         "max_sessions": 60, "batch_size": 32, "max_datagram_size": 1500, "egress_rate": 0, "free_bind": "off",
         "turn": ["127.0.0.1:3478"], "turn_realm": "old.example", "turn_user": ["alice:old-password"],
         "turn_users_file": "u1.txt", "turn_secret": ["old-secret"], "turn_secret_file": "s1.txt", "turn_nonce_secret": ["old-nonce"], "turn_allowed_peer": ["127.0.0.0/8"],
         "turn_denied_peer": ["127.0.0.9"], "turn_max_allocations": 10, "turn_max_allocations_per_user": 1,
         "turn_bandwidth": 1000, "turn_port_share": 10, "turn_max_channels": 100, "turn_unauthenticated_rate": 10,
         "ready_threshold": 0.9, "turn_alternates": ["127.0.0.2:3478"], "turn_alternate_domain": "old.example.org",
         "turn_tcp": ["127.0.0.1:3478"], "turn_tls": ["127.0.0.1:5349"], "tls_cert": "\(tls.certificate)",
         "tls_key": "\(tls.key)", "turn_max_connections": 100, "turn_max_connections_per_source": 10,
         "fast_path": "off", "fast_path_interfaces": ["lo"]}
        """
    }
    private func after(_ tls: CertificateFixture.Server) -> String {
        """
        {"engine": "uring", "gso": "on", "gro": "on", "workers": 4, "forward": ["127.0.0.1:7778=127.0.0.1:9000"],
         "ports": "42000-42099", "relay_address": "0.0.0.0", "advertise_address": "192.0.2.2", "http": "0.0.0.0:9481",
         "control_token": "new-token", "dscp": "class", "service_class": "interactiveVoice", "ecn": "preserve",
         "ecn_marking": "off", "ecn_l4s_threshold": 30, "ecn_classic_threshold": 60, "ecn_backlog": "off",
         "ecn_backlog_l4s_threshold": 2000, "ecn_backlog_classic_threshold": 10000,
         "log_level": "debug", "log_format": "json", "drain_seconds": 5, "idle_timeout_seconds": 30, "max_clients": 5,
         "max_sessions": 6, "batch_size": 16, "max_datagram_size": 9000, "egress_rate": 125000000, "free_bind": "on",
         "turn": ["127.0.0.1:3479"], "turn_realm": "new.example", "turn_user": ["alice:new-password"],
         "turn_users_file": "u2.txt", "turn_secret": ["new-secret"], "turn_secret_file": "s2.txt", "turn_nonce_secret": ["new-nonce"], "turn_allowed_peer": ["::1"],
         "turn_denied_peer": ["127.0.0.8"], "turn_max_allocations": 20, "turn_max_allocations_per_user": 2,
         "turn_bandwidth": 2000, "turn_port_share": 20, "turn_max_channels": 200, "turn_unauthenticated_rate": 0,
         "ready_threshold": 1, "turn_alternates": ["127.0.0.3:3478", "tls:127.0.0.3:5349"], "turn_alternate_domain": "new.example.org",
         "turn_tcp": ["127.0.0.1:3479"], "turn_tls": ["127.0.0.1:443"], "tls_cert": "\(tls.certificate)",
         "tls_key": "\(tls.key)", "turn_max_connections": 200, "turn_max_connections_per_source": 20,
         "fast_path": "tc", "fast_path_interfaces": ["lo", "eth0"]}
        """
    }
    private let usersFiles = ["u1.txt": "bob:one\n", "u2.txt": "bob:two\n", "s1.txt": "one\n", "s2.txt": "two\n"]

    func testReloadableKeysAreAppliedAndTheRestWaitForARestart() throws {
        let certificates = try CertificateFixture()
        let old = try XCTUnwrap(runOptions(["--config", "c.json"], files: usersFiles.merging(["c.json": before(certificates.server)]) { $1 }))
        let new = try XCTUnwrap(runOptions(["--config", "c.json"], files: usersFiles.merging(["c.json": after(certificates.secondServer)]) { $1 }))
        for key in OptionKey.allCases {
            XCTAssertNotEqual(key.text(in: old), key.text(in: new), "the fixture does not change \(key.configKey)")
        }
        let reload = ConfigReload(running: old, reloaded: new)
        XCTAssertEqual(reload.applied, OptionKey.allCases.filter(\.isReloadable))
        XCTAssertEqual(reload.needsRestart, OptionKey.allCases.filter { !$0.isReloadable })
        for key in OptionKey.allCases {
            // What is applied is what the running options now hold; the rest keeps running.
            XCTAssertEqual(key.text(in: reload.running), key.text(in: key.isReloadable ? new : old), key.configKey)
        }
        XCTAssertEqual(ConfigReload(running: reload.running, reloaded: new).needsRestart, reload.needsRestart,
                       "still reported on the next reload, until a restart")
        let summary = reload.summary
        XCTAssertTrue(summary.hasPrefix("applied control_token (changed), dscp zero -> class (new sessions;"), summary)
        XCTAssertTrue(summary.contains("max_sessions 60 -> 6"), summary)
        XCTAssertTrue(summary.contains("ecn_marking on -> off (new sessions and TURN allocations;"), summary)
        XCTAssertTrue(summary.contains("egress_rate (running 0)"), summary)
        XCTAssertTrue(summary.contains("ready_threshold 0.9 -> 1.0"), summary)
        XCTAssertTrue(summary.contains("turn_alternates 127.0.0.2:3478 -> 127.0.0.3:3478,tls:127.0.0.3:5349 (new redirects)"), summary)
        XCTAssertTrue(summary.contains("turn_max_channels 100 -> 200 (new channels), turn_unauthenticated_rate 10 -> 0"), summary)
        XCTAssertTrue(summary.contains("; needs a restart to take effect: engine (running mmsg), gso (running off)"), summary)
        XCTAssertFalse(summary.contains("new-token") || summary.contains("old-token"), "a token in the log")
        for secret in ["old-password", "new-password", "old-secret", "new-secret", "bob:one", "bob:two"] {
            XCTAssertFalse(summary.contains(secret), "a TURN password or secret in the log")
        }
        XCTAssertTrue(summary.contains("turn_user (changed)") && summary.contains("turn_secret (changed)"), summary)
        XCTAssertTrue(summary.contains("turn_realm (running old.example)"), summary)
        // A certbot renewal: new TLS connections get the new pair; listeners wait for a restart.
        let (oldCert, newCert) = (OptionError.quoted(certificates.server.certificate), OptionError.quoted(certificates.secondServer.certificate))
        XCTAssertTrue(summary.contains("tls_cert \(oldCert) -> \(newCert) (new TLS connections)"), summary)
        XCTAssertTrue(summary.contains("turn_tcp (running 127.0.0.1:3478)") && summary.contains("turn_tls (running 127.0.0.1:5349)"), summary)
        // The program loaded at start stays as it was, entries included; the line says so.
        XCTAssertTrue(summary.contains("fast_path (running off) (the fast path attached at start keeps running, and its entries stay)"), summary)
        XCTAssertTrue(summary.contains("fast_path_interfaces (running lo) (the fast path"), summary)
        XCTAssertFalse(summary.contains("\n"))
    }

    func testAnUnchangedFileSaysSo() throws {
        let certificates = try CertificateFixture()
        let options = try XCTUnwrap(runOptions(["--config", "c.json"], files: usersFiles.merging(["c.json": before(certificates.server)]) { $1 }))
        XCTAssertEqual(ConfigReload(running: options, reloaded: options).summary, "nothing changed")
    }
}
