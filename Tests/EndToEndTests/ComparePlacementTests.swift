import BenchSupport
import Foundation
import TestSupport
import XCTest

/// `mediarelay-load compare --pin relay`, as make demo runs it, end to end through the real
/// relay: the report names the CPU model and what shares which CPU, judges each check with its
/// interval, and explains the engines from the relay's own counters (datagrams per receive call
/// and per turn, read from the new /v1/stats keys).
final class ComparePlacementTests: XCTestCase {
    func testTheRelayAloneOnItsCPUWithChecksAndCounters() throws {
        guard CPUPlacement.alone() != nil else { throw XCTSkip("fewer than two CPUs allowed here: no CPU for the relay alone") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("compare-placement-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("run").path
        let products = RelayProcess.productsDirectory
        let (status, said) = try ChildProcess.run(products.appendingPathComponent("mediarelay-load").path, [
            "compare", "--server", products.appendingPathComponent("mediarelay").path, "--pin", "relay",
            "--engines", "perpacket,mmsg", "--loads", "50k", "--repeats", "1", "--max-repeats", "2", "--seconds", "0.5", "--out", out,
        ], seconds: 120)
        XCTAssertEqual(status, 0, said)
        let md = try String(contentsOfFile: out + ".md", encoding: .utf8)
        XCTAssertTrue(md.contains("Machine: CPU \(MachineInfo.current().cpuModel), "), md)
        XCTAssertNotNil(md.range(of: #"Placement: the relay \(every thread; the C forwarder likewise\) on CPU \d+, alone; the generator's sending thread on CPU \d+"#,
                                 options: .regularExpression), md)
        // One check at 50k (mmsg against perpacket), judged on one or two paired rounds.
        let check = try XCTUnwrap(md.split(separator: "\n").first { $0.hasPrefix("| mmsg: CPU saved | 50k | perpacket | ") }, md)
        XCTAssertNotNil(check.range(of: #"\| [12] \| at least 25 % \| (met|not met|inconclusive) \|$"#, options: .regularExpression), String(check))
        // The counters: perpacket reads one datagram per call, and a turn holds at least one.
        let row = try XCTUnwrap(md.split(separator: "\n").first { $0.hasPrefix("| 50k | perpacket | ") }, md)
        let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertEqual(cells[3], "1.0", "datagrams per receive call: \(row)")
        XCTAssertGreaterThanOrEqual(Double(cells[4]) ?? 0, 1, "datagrams per turn: \(row)")
        XCTAssertTrue(md.contains("SO_TIMESTAMPNS"), "the latency columns say what they hold")
    }
}
