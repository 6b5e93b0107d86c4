import Foundation
import Glibc
import TestPorts
import XCTest

/// mediarelay-load against the real server: a 2-second run fills every JSON field, and the
/// relay's own CPU figure agrees with the kernel's accounting of the relay process.
final class LoadGeneratorTests: XCTestCase {
    func testTwoSecondRunFillsEveryFieldAndCPUAgreesWithProc() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 100), ["--workers", "1"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let object = try Self.runLoad(["--relay", "http://127.0.0.1:\(relay.httpPort)", "--streams", "8", "--rate", "30000",
                                  "--seconds", "2", "--tos", "\((46 << 2) | 1)", "--relay-pid", "\(relay.process.processIdentifier)"])
        for key in ["sent", "received", "lost", "reordered", "duplicated", "latency_us", "jitter_us", "ecn_kept", "dscp_kept",
                    "generator_cpu_seconds", "relay_cpu_ns_per_packet", "relay_syscalls_per_packet", "relay_engine",
                    "relay_cpu_seconds", "relay_proc_cpu_seconds"] {
            XCTAssertNotNil(object[key], key)
            XCTAssertFalse(object[key] is NSNull, "\(key) is null")
        }
        let latency = try XCTUnwrap(object["latency_us"] as? [String: Any])
        for key in ["p50", "p90", "p99", "p999", "max"] { XCTAssertNotNil(latency[key] as? Double ?? (latency[key] as? Int).map(Double.init), key) }
        let sent = try XCTUnwrap(object["sent"] as? Int)
        let received = try XCTUnwrap(object["received"] as? Int)
        // No delivery threshold: generator and relay share a loaded machine here, and loss
        // figures belong in bench/. What must hold: traffic crossed, none of it twice.
        XCTAssertGreaterThan(sent, 10_000)
        XCTAssertGreaterThan(received, 0)
        XCTAssertLessThanOrEqual(received, sent)
        XCTAssertEqual(object["duplicated"] as? Int, 0)
        XCTAssertEqual(object["ecn_kept"] as? Double, 1, "ECT(1) crossed the relay intact")
        XCTAssertEqual(object["dscp_kept"] as? Double, 1)
        XCTAssertEqual(object["relay_engine"] as? String, "uring")

        // Both figures cover the same interval of the same process; /proc counts 1/100 s ticks.
        let stats = try XCTUnwrap(object["relay_cpu_seconds"] as? Double)
        let proc = try XCTUnwrap(object["relay_proc_cpu_seconds"] as? Double)
        XCTAssertGreaterThan(stats, 0.05, "enough CPU for the comparison to mean something")
        XCTAssertLessThanOrEqual(abs(proc - stats), max(0.10 * stats, 0.02), "stats \(stats) s against /proc \(proc) s")
    }

    /// --congestion-control through the real relay at a leg's limit: ECT(1) scalable senders
    /// offered 1.5x back off on the relay's CE marks and lose nothing; with the session's
    /// marking off they learn of the limit only by losses. Two runs of 4 s, side by side.
    func testECNReactiveSendersBackOffOnMarksWithoutLoss() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 20), ["--workers", "1"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        var results: [String: [String: Any]] = [:]
        for marking in ["on", "off"] {
            results[marking] = try Self.runLoad([
                "--relay", "http://127.0.0.1:\(relay.httpPort)", "--streams", "2", "--rate", "3000", "--seconds", "4",
                "--tos", "\((34 << 2) | 1)", "--congestion-control", "scalable",
                "--session", #"{"max_packets_per_second": 1000, "ecn_marking": "\#(marking)"}"#])
        }
        let on = try XCTUnwrap(results["on"]), off = try XCTUnwrap(results["off"])
        XCTAssertEqual(on["congestion_control"] as? String, "scalable")
        XCTAssertEqual(on["lost"] as? Int, 0, "lost with marking on: \(on)")
        XCTAssertGreaterThan(on["ce_fraction"] as? Double ?? 0, 0, "\(on)")
        XCTAssertLessThan(on["controlled_rate"] as? Double ?? .infinity, 3000, "the senders did not slow down: \(on)")
        XCTAssertGreaterThan(off["lost"] as? Int ?? 0, 0, "marking off must be lossy: \(off)")
        XCTAssertEqual(off["ce_fraction"] as? Double, 0)
    }

    func testBadArgumentsAndARefusedTokenEndWithOneLineAndExitTwo() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 50), [], environment: ["MEDIARELAY_CONTROL_TOKEN": "sesame"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        for arguments in [["--relay", "http://127.0.0.1:\(relay.httpPort)", "--streams", "0"],
                          ["--relay", "http://127.0.0.1:\(relay.httpPort)", "--token", "wrong", "--seconds", "1"],
                          ["--relay", "http://127.0.0.1:1", "--seconds", "1"]] {
            let (status, errors) = try run(arguments)
            XCTAssertEqual(status, 2, "\(arguments): \(errors)")
            XCTAssertEqual(errors.split(separator: "\n").count, 1, "\(arguments): \(errors)")
        }
    }

    /// --target drives a forward rule, the generator playing its upstream.
    func testForwardRuleModeThroughTheRealServer() throws {
        let listen = try FreePort.udp()
        let upstream = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(count: 50), ["--forward", "127.0.0.1:\(listen)=127.0.0.1:\(upstream)"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let object = try Self.runLoad(["--target", "127.0.0.1:\(listen)", "--upstream-listen", "127.0.0.1:\(upstream)",
                                  "--relay", "http://127.0.0.1:\(relay.httpPort)", "--streams", "3", "--rate", "3000",
                                  "--seconds", "1", "--profile", "constant", "--tos", "\((34 << 2) | 2)"])
        let sent = try XCTUnwrap(object["sent"] as? Int)
        XCTAssertGreaterThan(sent, 1_000)
        let received = try XCTUnwrap(object["received"] as? Int)
        XCTAssertGreaterThan(received, 0)
        XCTAssertLessThanOrEqual(received, sent)
        XCTAssertEqual(object["duplicated"] as? Int, 0)
        XCTAssertEqual(object["ecn_kept"] as? Double, 1)
        XCTAssertEqual(try relay.stats()["forward_clients"] as? Int, 3)
    }

    /// Ctrl-C ends the run early, and the sessions the generator created are deleted.
    func testInterruptDeletesTheSessionsItCreated() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 50), [])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let process = Process()
        process.executableURL = RelayProcess.productsDirectory.appendingPathComponent("mediarelay-load")
        process.arguments = ["--relay", "http://127.0.0.1:\(relay.httpPort)", "--streams", "5", "--rate", "500",
                             "--seconds", "30", "--no-progress"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var sessions = 0
        let deadline = Date().addingTimeInterval(10)
        while sessions < 5 && Date() < deadline {
            usleep(100_000)
            sessions = (try relay.request("GET", "/v1/sessions").json?["sessions"] as? [Any])?.count ?? 0
        }
        XCTAssertEqual(sessions, 5, "the generator made its sessions")
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 130)
        let left = (try relay.request("GET", "/v1/sessions").json?["sessions"] as? [Any])?.count
        XCTAssertEqual(left, 0, "deleted on the way out")
    }

    /// Runs mediarelay-load with --json and returns its last stdout line, parsed.
    static func runLoad(_ arguments: [String]) throws -> [String: Any] {
        let process = Process()
        process.executableURL = RelayProcess.productsDirectory.appendingPathComponent("mediarelay-load")
        process.arguments = arguments + ["--json", "--no-progress"]
        let output = Pipe()
        process.standardOutput = output
        // Kept in a file (a second pipe could fill while stdout is read): a failure says why.
        let errorsFile = FileManager.default.temporaryDirectory.appendingPathComponent("mediarelay-load-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errorsFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errorsFile) }
        process.standardError = try FileHandle(forWritingTo: errorsFile)
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, (try? String(contentsOf: errorsFile, encoding: .utf8)) ?? "")
        let last = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any], last)
    }

    private func run(_ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = RelayProcess.productsDirectory.appendingPathComponent("mediarelay-load")
        process.arguments = arguments + ["--no-progress"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
