import BenchSupport
import Foundation
import LoadGen
import TestSupport
import XCTest

/// `mediarelay-load compare` end to end with a C counterpart: the real relay and the C reference
/// forwarder (compiled here, as ReferenceForwarderTests does) at one load over many sessions,
/// one quick repeat each, and the report's relay/C row written from the two runs.
final class CompareReferenceTests: XCTestCase {
    func testOneBackendBesideItsCReferenceOverManySessions() throws {
        let forwarder = try ReferenceForwarderTests.binary.get()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("compare-reference-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("run").path
        let products = RelayProcess.productsDirectory
        // Pinned where the machine allows it, so --pin split is exercised too.
        let pin = CPUPlacement.split() == nil ? [] : ["--pin", "split"]
        let (status, said) = try ChildProcess.run(products.appendingPathComponent("mediarelay-load").path, [
            "compare", "--server", products.appendingPathComponent("mediarelay").path, "--reference", forwarder,
            "--references", "all", "--engines", "uring+gso", "--loads", "10kx50", "--quick", "--out", out,
        ] + pin, seconds: 120)
        XCTAssertEqual(status, 0, said)

        let csv = try String(contentsOfFile: out + ".csv", encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        let columns = try XCTUnwrap(csv.first).map(String.init)
        func field(_ row: [Substring], _ name: String) -> String { columns.firstIndex(of: name).map { String(row[$0]) } ?? "" }
        let runs = csv.dropFirst()
        XCTAssertEqual(runs.map { field($0, "engine") }.sorted(), ["c-uring+gso", "uring+gso"], said)
        for run in runs {
            let engine = field(run, "engine")
            XCTAssertEqual(field(run, "error"), "", engine)
            XCTAssertEqual(field(run, "streams"), "50", engine)
            XCTAssertEqual(field(run, "relay_engine"), engine == "uring+gso" ? "uring" : "c-uring", "the backend that ran")
            XCTAssertGreaterThan(Double(field(run, "received")) ?? 0, 0, "\(engine): traffic crossed")
            XCTAssertGreaterThan(Double(field(run, "relay_cpu_us_per_datagram")) ?? 0, 0, "\(engine): CPU was measured")
        }

        let md = try String(contentsOfFile: out + ".md", encoding: .utf8)
        XCTAssertTrue(md.contains("## The relay against the C reference of its backend"), md)
        let row = try XCTUnwrap(md.split(separator: "\n").first { $0.hasPrefix("| 10kx50 | uring+gso | ") }, md)
        let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertNotNil(cells[4].range(of: #"^\d+\.\d{3}x \(\d+\.\d{3}-\d+\.\d{3}\)$"#, options: .regularExpression), String(row))
        XCTAssertEqual(cells[5], "1", "one repeat, paired")
    }
}
