import DatagramEngine
import Foundation
import NetAddress
import TestPorts
import XCTest

/// /v1/stats and /metrics count exactly what was sent.
final class StatsTests: XCTestCase {
    func testStatsCountExactlyWhatWasSent() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 100), ["--workers", "2"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let session = try relay.createSession()
        // Sent and received by the load generator's socket code, so the relay's ECN counters
        // are checked against marks the relay's engine did not also write or read at our end.
        let a = try IndependentPeer(host: "127.0.0.1")
        let b = try IndependentPeer(host: "127.0.0.1")
        try b.send([0], tos: 0, to: "127.0.0.1", port: session.legs[1].port)  // 1 in, dropped: no destination
        try relay.waitForLatch(session: session.id, leg: 1)
        var markings: [ECN: Int] = [:]
        for index in 0..<200 {
            let ecn = ECN.allCases[index % 4]
            markings[ecn, default: 0] += 1
            try a.send([UInt8](repeating: 1, count: 100), tos: ecn.rawValue, to: "127.0.0.1", port: session.legs[0].port)
        }
        XCTAssertEqual(b.receive(expected: 200).count, 200)
        // Snapshots are published every 100 ms: wait for the one that has everything.
        let stats = try relay.waitFor { ($0["packets_out"] as? Int ?? 0) >= 200 }
        XCTAssertEqual(stats["packets_in"] as? Int, 201)
        XCTAssertEqual(stats["packets_out"] as? Int, 200)
        XCTAssertEqual(stats["bytes_out"] as? Int, 20_000)
        XCTAssertEqual(stats["bytes_in"] as? Int, 20_001)
        let ecnIn = try XCTUnwrap(stats["ecn_in"] as? [String: Int])
        let ecnOut = try XCTUnwrap(stats["ecn_out"] as? [String: Int])
        for ecn in ECN.allCases {
            XCTAssertEqual(ecnOut[ecn.name], markings[ecn], ecn.name)
            XCTAssertEqual(ecnIn[ecn.name], markings[ecn]! + (ecn == .notECT ? 1 : 0), ecn.name)
        }
        XCTAssertEqual((stats["drops"] as? [String: Int])?["no_destination"], 1)
        XCTAssertEqual(stats["sessions"] as? Int, 1)
        XCTAssertEqual(stats["workers"] as? Int, 2)
        let perWorker = try XCTUnwrap(stats["per_worker"] as? [[String: Any]])
        XCTAssertEqual(perWorker.count, 2)
        XCTAssertEqual(perWorker.compactMap { $0["packets_in"] as? Int }.reduce(0, +), 201)
        XCTAssertTrue(perWorker.allSatisfy { $0["cpu_user_seconds"] is Double && $0["cpu_ns_per_packet"] is Double })
        XCTAssertEqual(stats["sessions_created"] as? Int, 1)
        for key in ["engine", "uptime_seconds", "cpu_user_seconds", "cpu_system_seconds", "cpu_ns_per_packet",
                    "syscalls", "syscalls_per_packet", "batch_size_histogram", "forward_clients"] {
            XCTAssertNotNil(stats[key], key)
        }
        let histogram = try XCTUnwrap(stats["batch_size_histogram"] as? [String: Int])
        XCTAssertGreaterThan(histogram.values.reduce(0, +), 0)
        XCTAssertEqual(histogram.values.reduce(0, +), stats["receive_batches"] as? Int, "one entry per receive call")
        // Datagrams per turn beside datagrams per call: no more turns than calls, one entry each.
        let turns = try XCTUnwrap(stats["receive_turns"] as? Int)
        let turnHistogram = try XCTUnwrap(stats["turn_size_histogram"] as? [String: Int])
        XCTAssertEqual(Set(turnHistogram.keys), Set(histogram.keys))
        XCTAssertEqual(turnHistogram.values.reduce(0, +), turns)
        XCTAssertGreaterThan(turns, 0)
        XCTAssertLessThanOrEqual(turns, try XCTUnwrap(stats["receive_batches"] as? Int))

        let metrics = try relay.request("GET", "/metrics").text
        let packetsIn = metrics.split(separator: "\n").filter { $0.hasPrefix("mediarelay_packets_in_total{") }
            .compactMap { Int($0.split(separator: " ").last!) }.reduce(0, +)
        XCTAssertEqual(packetsIn, 201)
        XCTAssertTrue(metrics.contains("mediarelay_ecn_out_total{worker=\"0\",codepoint=\"ce\"}") ||
                      metrics.contains("mediarelay_ecn_out_total{worker=\"1\",codepoint=\"ce\"}"))
        XCTAssertFalse(metrics.contains(session.id), "no per-session labels")
    }
}
