import Foundation
import RelayObservation
import TestPorts
import TestSupport
import XCTest

/// Runs the real `mediarelay` binary. These fail until the server's main is wired to the
/// options, the notifier and the HTTP listener; they are meant to.
final class RunningServerTests: XCTestCase {
    func testNotifiesReadyThenStoppingAndExitsZeroOnSIGTERM() throws {
        let notify = try NotifySocket()
        let server = try startRelay(
            arguments: ["--http", "127.0.0.1:0", "--ports", "47000-47099"],
            environment: ["NOTIFY_SOCKET": notify.path]
        )
        var seen: [String] = []
        let ready = notify.waitFor("READY=1", until: Date().addingTimeInterval(20), seen: &seen) { server.isRunning }
        XCTAssertTrue(ready, "no READY=1 within 20 s (or the server exited first); datagrams \(seen); running \(server.isRunning); stderr: \(server.log)")
        guard ready else { return }

        server.signal(SIGTERM)
        let stopping = notify.waitFor("STOPPING=1", until: Date().addingTimeInterval(10), seen: &seen) { server.isRunning }
        XCTAssertTrue(stopping, "no STOPPING=1 after SIGTERM; datagrams \(seen); stderr: \(server.log)")
        XCTAssertEqual(server.waitForExit(timeout: 10), 0, "exit after SIGTERM; stderr: \(server.log)")
    }

    func testSendsWatchdogPingsWhenSystemdAsksForThem() throws {
        let notify = try NotifySocket()
        // 2 s: the server should ping every second (half), so one must arrive within 5 s of READY.
        let server = try startRelay(
            arguments: ["--http", "127.0.0.1:0", "--ports", "47100-47199"],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "2000000"]
        )
        var seen: [String] = []
        let ready = notify.waitFor("READY=1", until: Date().addingTimeInterval(20), seen: &seen) { server.isRunning }
        XCTAssertTrue(ready, "no READY=1 within 20 s; stderr: \(server.log)")
        guard ready else { return }
        let pinged = notify.waitFor("WATCHDOG=1", until: Date().addingTimeInterval(5), seen: &seen) { server.isRunning }
        XCTAssertTrue(pinged, "no WATCHDOG=1 within 5 s of READY with WATCHDOG_USEC=2000000; datagrams \(seen)")
        server.signal(SIGTERM)
        XCTAssertEqual(server.waitForExit(timeout: 10), 0)
    }

    func testEveryMetricUsedByDashboardsAndAlertsIsExposed() throws {
        // TURN over TLS too, for the metrics only a relay with a certificate has.
        let certificates = try CertificateFixture()
        let tls = try FreePort.tcp()
        let server = try startRelay(arguments: ["--http", "127.0.0.1:0", "--ports", "47200-47299", "--turn-tls", "127.0.0.1:\(tls)",
                                                   "--tls-cert", certificates.server.certificate, "--tls-key", certificates.server.key,
                                                   "--turn-secret", "s"])
        let line = server.waitForLine(containing: "http listening on ", timeout: 20)
        let listening = try XCTUnwrap(line, "no `http listening on HOST:PORT` line within 20 s (or the server exited first, running: \(server.isRunning)); stderr: \(server.log)")
        let address = try XCTUnwrap(listening.components(separatedBy: "http listening on ").last?.split(separator: " ").first)
        let port = try XCTUnwrap(address.split(separator: ":").last.flatMap { UInt16($0) }, "no port in \(listening)")

        let response = try XCTUnwrap(httpGet(port: port, path: "/metrics"), "GET /metrics on port \(port) got no answer")
        XCTAssertEqual(response.status, 200)
        var exposed = Set<String>()
        for line in response.body.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") || line.hasPrefix("# HELP ") {
                let words = line.split(separator: " ")
                if words.count >= 3 { exposed.insert(metricFamily(String(words[2]))) }
            } else if !line.hasPrefix("#") {
                let name = line.prefix { $0 != "{" && $0 != " " }
                exposed.insert(metricFamily(String(name)))
            }
        }
        for (family, files) in try metricFamiliesUsedInDeploy().sorted(by: { $0.key < $1.key }) {
            XCTAssertTrue(exposed.contains(family), "\(family), used in \(Set(files).sorted()), is not in /metrics")
        }
        server.signal(SIGTERM)
        _ = server.waitForExit(timeout: 10)
    }
}

