import Foundation
import Glibc
import TestSupport
import XCTest

/// An ECN-capable congestion controller that is not ours: the kernel's TCP (Reno, tcp_ecn=1 in
/// network namespaces), carried inside VXLAN through a relay session at its rate limit, by
/// bench/ecn-tcp-vxlan.sh (which builds and removes the namespaces). With the relay marking CE
/// it backs off before the bucket is empty: at least 95% fewer retransmissions than with
/// marking off, at a goodput within 10% of it. Two runs of 5 s; the test takes about 15 s.
final class KernelTCPMarkingTests: XCTestCase {
    func testTheKernelsTCPRetransmitsFarLessWhenTheRelayMarks() throws {
        try TestTools.require(["/usr/bin/iperf3", "/usr/sbin/ip", "/usr/sbin/ethtool"])
        try HostRequirement.require(getuid() == 0, "network namespaces need root")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("bench/ecn-tcp-vxlan.sh")
        let relay = RelayProcess.productsDirectory.appendingPathComponent("mediarelay")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script.path, "--relay", relay.path, "--rate", "20000", "--seconds", "5"]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Bounded: the script's own steps take about 15 s; past 60 s it is stopped (its trap
        // removes the namespaces on SIGTERM too).
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        try HostRequirement.require(process.terminationStatus != 77, "this host does not allow network namespaces: \(said)")
        XCTAssertEqual(process.terminationStatus, 0, said)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let last = text.split(separator: "\n").last.map(String.init) ?? ""
        let result = try XCTUnwrap((try? JSONSerialization.jsonObject(with: Data(last.utf8))) as? [String: Any], text + said)
        let on = try XCTUnwrap(result["on"] as? [String: Any]), off = try XCTUnwrap(result["off"] as? [String: Any])
        func number(_ run: [String: Any], _ key: String) -> Double { (run[key] as? NSNumber)?.doubleValue ?? .nan }

        XCTAssertEqual(on["congestion_control"] as? String, "reno", said)
        XCTAssertGreaterThan(number(on, "ect0_in"), 0, "TCP did not negotiate ECN: \(said)")
        XCTAssertGreaterThan(number(on, "ce_marked"), 0, said)
        XCTAssertEqual(number(off, "ce_marked"), 0, said)
        XCTAssertGreaterThan(number(off, "retransmits"), 100, "marking off must be the lossy case it is compared with: \(said)")
        XCTAssertLessThanOrEqual(number(on, "retransmits"), 0.05 * number(off, "retransmits"), "not 95% fewer: \(said)")
        XCTAssertEqual(number(on, "goodput_bps"), number(off, "goodput_bps"), accuracy: 0.1 * number(off, "goodput_bps"), said)
    }
}
