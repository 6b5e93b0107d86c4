import Foundation
import TestSupport
import XCTest

/// The alerting and recording rules through Prometheus's own checker. `promtool check config`
/// is left out: Debian's build of Prometheus has no Kubernetes service discovery and refuses
/// prometheus.yml's kubernetes_sd_configs, which a real Prometheus accepts.
final class PrometheusRulesTests: XCTestCase {
    func testPromtoolAcceptsEveryRuleFile() throws {
        let promtool = try TestToolSupport.require("promtool", install: "Debian: apt-get install prometheus")
        let ruleFiles = deployFiles(withExtensions: ["yml", "yaml"]).filter {
            $0.path.contains("/deploy/prometheus/") && $0.lastPathComponent != "prometheus.yml"
        }
        XCTAssertFalse(ruleFiles.isEmpty, "no rule files under deploy/prometheus")
        let result = try Command.run(promtool, ["check", "rules"] + ruleFiles.map(\.path))
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(result.output.components(separatedBy: "SUCCESS:").count - 1, ruleFiles.count, result.output)
    }

    /// The TURN alerts fire on the series that should fire them and on nothing else: a relay
    /// near or at its connection cap, and one whose TLS clients fail their handshakes (an
    /// expired certificate), but not one whose failures are scanners, clients giving up, a few
    /// refusals among many handshakes, or too few to judge. `promtool test rules` evaluates
    /// the real alerts.yml over made-up counters, annotations included.
    func testTheTURNAlertsFireOnlyWhenTheyShould() throws {
        let promtool = try TestToolSupport.require("promtool", install: "Debian: apt-get install prometheus")
        let alerts = repoRoot.appendingPathComponent("deploy/prometheus/alerts.yml").path
        let tests = """
            rule_files:
              - \(alerts)
            evaluation_interval: 1m
            tests:
              - interval: 1m
                input_series:
                  - series: 'mediarelay_turn_connections_closed_total{job="mediarelay",instance="full",worker="0",transport="tls",reason="over_capacity"}'
                    values: '0+60x60'
                  - series: 'mediarelay_turn_connections_closed_total{job="mediarelay",instance="fine",worker="0",transport="tls",reason="over_capacity"}'
                    values: '0x60'
                  - series: 'mediarelay_turn_connections_closed_total{job="mediarelay",instance="fine",worker="0",transport="tcp",reason="per_source_limit"}'
                    values: '0+600x60'
                  - series: 'mediarelay_capacity_in_use{job="mediarelay",instance="full",resource="turn_connections"}'
                    values: '3800x60'
                  - series: 'mediarelay_capacity_total{job="mediarelay",instance="full",resource="turn_connections"}'
                    values: '4000x60'
                  - series: 'mediarelay_capacity_in_use{job="mediarelay",instance="fine",resource="turn_connections"}'
                    values: '3000x60'
                  - series: 'mediarelay_capacity_total{job="mediarelay",instance="fine",resource="turn_connections"}'
                    values: '4000x60'
                  - series: 'mediarelay_capacity_in_use{job="mediarelay",instance="fine",resource="sessions"}'
                    values: '9999x60'
                  - series: 'mediarelay_capacity_total{job="mediarelay",instance="fine",resource="sessions"}'
                    values: '10000x60'
                  - series: 'mediarelay_turn_tls_handshakes_total{job="mediarelay",instance="expired",worker="0",result="failed_protocol"}'
                    values: '0+30x60'
                  - series: 'mediarelay_turn_tls_handshakes_total{job="mediarelay",instance="expired",worker="0",result="completed"}'
                    values: '0x60'
                  - series: 'mediarelay_turn_tls_handshakes_total{job="mediarelay",instance="expired",worker="0",result="failed_not_tls"}'
                    values: '0+120x60'
                  - series: 'mediarelay_turn_tls_handshakes_total{job="mediarelay",instance="healthy",worker="0",result="completed"}'
                    values: '0+60x60'
                  - series: 'mediarelay_turn_tls_handshakes_total{job="mediarelay",instance="healthy",worker="0",result="failed_protocol"}'
                    values: '0+3x60'
                  - series: 'mediarelay_turn_tls_handshakes_total{job="mediarelay",instance="scanned",worker="0",result="failed_not_tls"}'
                    values: '0+600x60'
                  - series: 'mediarelay_turn_tls_handshakes_total{job="mediarelay",instance="scanned",worker="0",result="failed_timeout"}'
                    values: '0+60x60'
                  - series: 'mediarelay_turn_tls_handshakes_total{job="mediarelay",instance="quiet",worker="0",result="failed_protocol"}'
                    values: '0+0.3x60'
                  - series: 'mediarelay_tls_certificate_expiry_seconds{job="mediarelay",instance="stale"}'
                    values: '500000-60x180'
                  - series: 'mediarelay_tls_certificate_expiry_seconds{job="mediarelay",instance="renewed"}'
                    values: '5000000-60x180'
                alert_rule_test:
                  - eval_time: 30m
                    alertname: MediarelayTURNConnectionsRefused
                    exp_alerts:
                      - exp_labels: {severity: warning, job: mediarelay, instance: full}
                        exp_annotations:
                          summary: "full: TURN connections refused at --turn-max-connections"
                          description: "1 connections/s closed on accept for capacity. Add relays, or raise turn_max_connections with the memory limit and LimitNOFILE."
                  - eval_time: 10m
                    alertname: MediarelayTURNConnectionsRefused
                  - eval_time: 20m
                    alertname: MediarelayTURNConnectionsNearCap
                    exp_alerts:
                      - exp_labels: {severity: warning, job: mediarelay, instance: full, resource: turn_connections}
                        exp_annotations:
                          summary: "full: TURN connections above 90% of --turn-max-connections"
                          description: "New TCP and TLS clients are closed on accept at the cap. Add relays, or raise turn_max_connections with the memory limit and LimitNOFILE."
                  - eval_time: 30m
                    alertname: MediarelayTLSCertificateExpiresSoon
                  - eval_time: 2h
                    alertname: MediarelayTLSCertificateExpiresSoon
                    exp_alerts:
                      - exp_labels: {severity: warning, job: mediarelay, instance: stale}
                        exp_annotations:
                          summary: "stale: the TLS certificate of TURN expires within a week"
                          description: "It expires in 5d 16h 53m 20s. Renew it and reload the relay (SIGHUP); its log then says: SIGHUP: TLS certificate ..., serial ..."
                  - eval_time: 45m
                    alertname: MediarelayTLSHandshakesFailing
                    exp_alerts:
                      - exp_labels: {severity: warning, job: mediarelay, instance: expired}
                        exp_annotations:
                          summary: "expired: most TLS handshakes of TURN clients fail"
                          description: "100% of TLS handshakes failed for protocol reasons over 15 minutes. Check the certificate: `openssl s_client -connect HOST:443 | openssl x509 -noout -dates -subject`, and that a renewal reached the relay (its log: SIGHUP: TLS certificate ...)."
            """
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("alerts-test-\(UUID().uuidString).yml")
        try tests.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try Command.run(promtool, ["test", "rules", file.path])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains("SUCCESS"), result.output)
    }
}
