import Foundation
import TestSupport
import XCTest
import JSONSyntax

/// The metric names of the stats contract (README, "Stats"; docs/ARCHITECTURE.md), typed out so
/// a dashboard or rule that uses a made-up name fails here even before a server exists.
let contractMetricFamilies: Set<String> = [
    "mediarelay_info", "mediarelay_uptime_seconds", "mediarelay_workers", "mediarelay_draining",
    "mediarelay_packets_in_total", "mediarelay_packets_out_total", "mediarelay_bytes_in_total",
    "mediarelay_bytes_out_total", "mediarelay_syscalls_total", "mediarelay_receive_batches_total",
    "mediarelay_batch_size", "mediarelay_ecn_in_total", "mediarelay_ecn_out_total", "mediarelay_ce_marks_total",
    "mediarelay_drops_total",
    "mediarelay_send_errors_total", "mediarelay_gso_segments_total", "mediarelay_cpu_seconds_total",
    "mediarelay_cpu_ns_per_packet", "mediarelay_syscalls_per_packet", "mediarelay_sessions",
    "mediarelay_sessions_max", "mediarelay_forward_clients",
    "mediarelay_turn_allocations", "mediarelay_turn_permissions", "mediarelay_turn_channels",
    "mediarelay_turn_allocation_events_total", "mediarelay_turn_allocations_refused_total",
    "mediarelay_turn_auth_failures_total", "mediarelay_turn_drops_total", "mediarelay_turn_datagrams_total",
    "mediarelay_turn_bytes_total",
    // TURN by the client's transport (udp, tcp, tls): connections, their closes, TLS handshakes.
    "mediarelay_turn_connections", "mediarelay_turn_connections_opened_total", "mediarelay_turn_connections_closed_total",
    "mediarelay_turn_tls_handshakes_total", "mediarelay_turn_transport_allocations_total",
    "mediarelay_turn_transport_datagrams_total", "mediarelay_turn_transport_bytes_total",
    "mediarelay_tls_certificate_expiry_seconds",
    // What /readyz judges, by resource (allocations, sessions, ports, turn_ports, turn_connections).
    "mediarelay_capacity_in_use", "mediarelay_capacity_total",
    // The kernel fast path (its datagrams and bytes are in packets_out and bytes_out, path="kernel").
    "mediarelay_fast_path_interfaces", "mediarelay_fast_path_entries", "mediarelay_fast_path_capacity",
    "mediarelay_fast_path_refusals_total", "mediarelay_fast_path_handed_back_total", "mediarelay_fast_path_failed_total",
    "mediarelay_fast_path_ecn_in_total", "mediarelay_fast_path_ecn_out_total",
]

/// A histogram's samples belong to the family named without these suffixes.
func metricFamily(_ name: String) -> String {
    for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
        return String(name.dropLast(suffix.count))
    }
    return name
}

/// Every metric family that deploy/prometheus/*.yml and deploy/grafana/*.json refer to.
func metricFamiliesUsedInDeploy() throws -> [String: [String]] {
    var used: [String: [String]] = [:]
    let files = deployFiles(withExtensions: ["yml", "yaml", "json"]).filter {
        $0.path.contains("/deploy/prometheus/") || $0.path.contains("/deploy/grafana/")
    }
    for file in files {
        let text = try String(contentsOf: file, encoding: .utf8)
        for match in text.matches(of: /mediarelay_[a-z_]+/) {
            used[metricFamily(String(match.output)), default: []].append(file.lastPathComponent)
        }
    }
    return used
}

final class DeployFilesTests: XCTestCase {
    func testEveryJSONFileParses() throws {
        let files = deployFiles(withExtensions: ["json"])
        XCTAssertGreaterThanOrEqual(files.count, 2, "expected the example config and the dashboard")
        for file in files {
            // The relay's reader, stricter than Grafana's or kubectl's: a key given twice is refused.
            XCTAssertNoThrow(try JSONValue(parsing: Data(contentsOf: file)), file.path)
        }
    }

    func testEveryYAMLFileParses() throws {
        let files = deployFiles(withExtensions: ["yml", "yaml"])
        XCTAssertGreaterThanOrEqual(files.count, 7)
        // One python process for all files (its start is most of the cost); it names each file
        // that does not parse.
        let script = """
            import sys, yaml
            failed = 0
            for name in sys.argv[1:]:
                try:
                    list(yaml.safe_load_all(open(name)))
                except yaml.YAMLError as error:
                    failed = 1
                    print(name + ": " + str(error))
            sys.exit(failed)
            """
        let result = try Command.run("/usr/bin/env", ["python3", "-c", script] + files.map(\.path))
        XCTAssertEqual(result.status, 0, result.output)
    }

    func testTheConfigMapHoldsValidJSON() throws {
        let file = repoRoot.appendingPathComponent("deploy/kubernetes/configmap.yaml")
        let script = "import yaml,sys; sys.stdout.write(yaml.safe_load(open(sys.argv[1]))['data']['config.json'])"
        let result = try Command.run("/usr/bin/env", ["python3", "-c", script, file.path])
        XCTAssertEqual(result.status, 0, result.output)
        let object = try JSONValue(parsing: Array(result.output.utf8))
        XCTAssertEqual(object["ports"]?.string, "40000-40999")
    }

    func testTheDashboardIsAGrafanaDashboard() throws {
        let data = try Data(contentsOf: repoRoot.appendingPathComponent("deploy/grafana/mediarelay.json"))
        let dashboard = try JSONValue(parsing: data)
        XCTAssertGreaterThanOrEqual(dashboard["schemaVersion"]?.integer ?? 0, 36)
        let variables = dashboard["templating"]?["list"]?.elements ?? []
        XCTAssertTrue(variables.contains { $0["type"]?.string == "datasource" && $0["query"]?.string == "prometheus" })
        let panels = try XCTUnwrap(dashboard["panels"]?.elements)
        let ids = panels.compactMap { $0["id"]?.integer }
        XCTAssertEqual(Set(ids).count, panels.count, "panel ids must be unique")
        for panel in panels {
            let targets = panel["targets"]?.elements ?? []
            XCTAssertFalse(targets.isEmpty, "\(panel["title"]?.string ?? "?") has no query")
            XCTAssertTrue(targets.allSatisfy { $0["expr"]?.string?.contains("mediarelay_") == true })
        }
    }

    func testTheUnitFileIsANotifyServiceWithWatchdog() throws {
        let unit = try String(contentsOf: repoRoot.appendingPathComponent("deploy/systemd/mediarelay.service"), encoding: .utf8)
        let settings = unit.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        for required in [
            "Type=notify", "NotifyAccess=main", "KillSignal=SIGTERM", "DynamicUser=yes", "NoNewPrivileges=yes",
            "ProtectSystem=strict", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
            "ExecStart=/usr/local/bin/mediarelay --config /etc/mediarelay/config.json",
            "ExecReload=/bin/kill -HUP $MAINPID",
            // TURN over TLS on 443 as DynamicUser's unprivileged uid, and the kernel fast path.
            "CapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_BPF CAP_NET_ADMIN CAP_PERFMON",
            "AmbientCapabilities=CAP_NET_BIND_SERVICE CAP_BPF CAP_NET_ADMIN CAP_PERFMON",
        ] {
            XCTAssertTrue(settings.contains(required), "unit lacks \(required)")
        }
        XCTAssertTrue(settings.contains { $0.hasPrefix("WatchdogSec=") })
        XCTAssertTrue(settings.contains { $0.hasPrefix("LimitNOFILE=") })
        let filter = try XCTUnwrap(settings.first { $0.hasPrefix("SystemCallFilter=") })
        for call in ["@system-service", "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf"] {
            XCTAssertTrue(filter.contains(call), "SystemCallFilter lacks \(call)")
        }
        // The stop timeout must outlast the example config's drain.
        let stop = try XCTUnwrap(settings.first { $0.hasPrefix("TimeoutStopSec=") }.flatMap { Int($0.dropFirst("TimeoutStopSec=".count)) })
        let config = try JSONValue(parsing: Data(contentsOf: repoRoot.appendingPathComponent("deploy/systemd/config.json")))
        XCTAssertGreaterThan(Int64(stop), try XCTUnwrap(config["drain_seconds"]?.integer))
    }

    func testSystemdAnalyzeVerifyAcceptsTheUnit() throws {
        let systemdAnalyze = try TestToolSupport.require("systemd-analyze", install: "Debian: apt-get install systemd")
        // verify checks that ExecStart exists; the binary is not installed under /usr/local/bin
        // on a build host, so point it at the built one (or /bin/true) in a copy of the unit.
        let unit = try String(contentsOf: repoRoot.appendingPathComponent("deploy/systemd/mediarelay.service"), encoding: .utf8)
        let executable = BuiltProducts.relay?.path ?? "/bin/true"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("mediarelay.service")
        try unit.replacingOccurrences(of: "/usr/local/bin/mediarelay", with: executable).write(to: copy, atomically: true, encoding: .utf8)
        let result = try Command.run(systemdAnalyze, ["verify", copy.path])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertFalse(result.output.contains("mediarelay.service:"), "warnings about the unit: \(result.output)")
    }

    func testDeployUsesOnlyContractMetricNames() throws {
        let used = try metricFamiliesUsedInDeploy()
        XCTAssertGreaterThanOrEqual(used.count, 10, "the extraction found too few names to be working")
        for (family, files) in used.sorted(by: { $0.key < $1.key }) {
            XCTAssertTrue(contractMetricFamilies.contains(family), "\(family) (in \(Set(files).sorted())) is not a contract metric")
        }
    }

    func testMetricFamilyStripsHistogramSuffixes() {
        XCTAssertEqual(metricFamily("mediarelay_batch_size_bucket"), "mediarelay_batch_size")
        XCTAssertEqual(metricFamily("mediarelay_batch_size_count"), "mediarelay_batch_size")
        XCTAssertEqual(metricFamily("mediarelay_packets_in_total"), "mediarelay_packets_in_total")
    }
}
