import Foundation
import Glibc
import TestSupport
import XCTest

/// A real browser across a fleet: headless Chromium (libwebrtc's TURN client, which retries an
/// Allocate only after its first 401 and gives up on 438) connects two relay-only peer
/// connections through relay A, which is full or draining and names relay B in
/// ALTERNATE-SERVER. Tests/Browser/chromium-fleet.sh builds the namespaces (Chromium refuses a
/// redirect to loopback), runs both relays and the browser, and prints a verdict line. About
/// 5 s a case.
final class BrowserFleetTests: XCTestCase {
    func testABrowserSentOnByAFullRelayAllocatesOnTheSibling() throws {
        let verdict = try run("capacity")
        XCTAssertEqual(verdict["delivered"], 100, "every message crossed the two relays")
        XCTAssertEqual(verdict["a_allocations"], 1)
        XCTAssertEqual(verdict["b_allocations"], 1, "the redirected client allocated on the sibling")
        XCTAssertEqual(verdict["redirects"], 1)
    }

    func testABrowserSentOnByADrainingRelayAllocatesOnTheSibling() throws {
        let verdict = try run("drain")
        XCTAssertEqual(verdict["delivered"], 100)
        XCTAssertEqual(verdict["a_allocations"], 0)
        XCTAssertEqual(verdict["b_allocations"], 2)
        XCTAssertEqual(verdict["redirects"], 2)
    }

    /// The same page without a redirect: if this fails, the testbed is broken, not the fleet.
    func testTheBrowserConnectsThroughOneRelay() throws {
        let verdict = try run("plain")
        XCTAssertEqual(verdict["delivered"], 100)
        XCTAssertEqual(verdict["a_allocations"], 2)
    }

    /// Runs the script in `mode` and returns its verdict's numbers.
    private func run(_ mode: String) throws -> [String: Int] {
        try TestTools.require(["/usr/bin/chromium", "/usr/sbin/ip", "/usr/bin/curl"])
        try HostRequirement.require(getuid() == 0, "network namespaces need root")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Browser/chromium-fleet.sh")
        let relay = RelayProcess.productsDirectory.appendingPathComponent("mediarelay")
        let (status, output) = try ChildProcess.run("/bin/bash", [script.path, relay.path, mode] + BrowserFleetTests.fleetOptions,
                                                    seconds: 90)
        XCTAssertEqual(status, 0, output)
        let line = try XCTUnwrap(output.split(separator: "\n").last { $0.hasPrefix("verdict ") }, output)
        var numbers: [String: Int] = [:]
        for pair in line.split(separator: " ").dropFirst() {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Int(parts[1]) { numbers[String(parts[0])] = value }
        }
        if numbers["delivered"] != 100 { print(output) }
        return numbers
    }

    /// What both relays share so that either verifies the other's nonces.
    static let fleetOptions = ["--turn-nonce-secret", "browser-fleet-nonce-secret"]
}
