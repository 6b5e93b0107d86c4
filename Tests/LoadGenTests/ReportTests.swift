@testable import BenchSupport
import Foundation
import JSONSyntax
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import LoadComparison
@testable import RelayObservation
import XCTest
@testable import LoadGen

final class ReportTests: XCTestCase {
    /// Records for every engine at every standard load, with made-up but distinct figures.
    func records(repeats: Int = 2, engines: [EngineSetting] = EngineSetting.all) -> [RunRecord] {
        comparisonPlan(repeats: repeats, loads: LoadPoint.standard, engines: engines).enumerated().map { i, run in
            var r = LoadResult()
            r.sent = 1000
            r.received = 990
            r.seconds = 2
            r.latencyUs = [50, 80, 120 + Double(i), 300, 900]
            let index = Double(engines.firstIndex(of: run.engine)!)
            r.relay = RelayDelta(before: RelayStats(engine: run.engine.name, packetsIn: 0, packetsOut: 0, cpuUserSeconds: 0, cpuSystemSeconds: 0, syscalls: 0),
                                 after: RelayStats(engine: run.engine.name, packetsIn: 1000, packetsOut: 990, cpuUserSeconds: 0.004 - index * 0.0005,
                                                   cpuSystemSeconds: 0.001, syscalls: 2000 / (index + 1)))
            r.relayProcCPUSeconds = 0.005
            return RunRecord(run: run, result: r, error: i == 3 ? "relay said, \"no\"" : nil)
        }
    }

    func testPlanIsInterleavedAndComplete() {
        let plan = comparisonPlan(repeats: 3, loads: LoadPoint.standard, engines: EngineSetting.all)
        XCTAssertEqual(plan.count, 84)
        // Every block of 4 consecutive runs is one load on all four engines.
        for block in stride(from: 0, to: 84, by: 4) {
            let slice = plan[block..<block + 4]
            XCTAssertEqual(Set(slice.map(\.engine.name)).count, 4)
            XCTAssertEqual(Set(slice.map(\.load.label)).count, 1)
        }
        XCTAssertEqual(plan.map(\.repeatIndex), plan.map(\.repeatIndex).sorted(), "repeat-major")
        func value(_ flag: String, _ engine: EngineSetting) -> String? { engine.arguments.firstIndex(of: flag).map { engine.arguments[$0 + 1] } }
        XCTAssertEqual(EngineSetting.all.map { value("--gso", $0) }, ["off", "off", "off", "on"])
        XCTAssertEqual(EngineSetting.all.map { value("--gro", $0) }, ["off", "off", "off", "off"], "GRO only where the video rows ask")
        XCTAssertEqual(LoadPoint.standard[5].offeredRate, 100_000, "2000 voice streams x 50/s")
        XCTAssertEqual(LoadPoint.standard.last?.offeredRate, 42_000, "200 video streams x 30 frames/s x 7 datagrams of 1200 B")
        XCTAssertEqual(LoadPoint.standard.last?.senderGSO, true)
    }

    func testTheGROPairRunsAtVideoLoadsOnlyAndIsReported() {
        let loads = [LoadPoint.constant(10_000), LoadPoint.video(200)]
        let engines = EngineSetting.all + EngineSetting.videoGRO
        let plan = comparisonPlan(repeats: 2, loads: loads, engines: engines)
        XCTAssertEqual(plan.count, 2 * (4 + 6))
        XCTAssertFalse(plan.contains { $0.load.profile != .video && $0.engine.profiles != nil })
        XCTAssertEqual(Set(plan.filter { $0.load.profile == .video }.map(\.engine.name)).count, 6)
        let records = plan.map { run in
            var r = LoadResult()
            let cpu = run.engine.name == "mmsg+gso+gro" ? 0.003 : 0.004
            r.relay = RelayDelta(before: RelayStats(engine: "mmsg", packetsIn: 0, packetsOut: 0, cpuUserSeconds: 0, cpuSystemSeconds: 0, syscalls: 0),
                                 after: RelayStats(engine: "mmsg", packetsIn: 1000, packetsOut: 1000, cpuUserSeconds: cpu, cpuSystemSeconds: 0, syscalls: 10))
            return RunRecord(run: run, result: r, error: nil)
        }
        let cells = CellSummary.summarise(records, loads: loads, engines: engines.map(\.name))
        XCTAssertEqual(cells.count, 4 + 6, "no empty cells for engines that did not run at a load")
        XCTAssertTrue(ComparisonReport.gro(cells).contains("GRO at video200: mmsg+gso+gro 3.00 us per datagram against mmsg+gso's 4.00 us (25.0 % saved)"),
                      ComparisonReport.gro(cells))
    }

    func testCSVHasOneRowPerRunAndTheDocumentedColumns() throws {
        let recs = records()
        let csv = ComparisonCSV.render(recs)
        let lines = csv.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        XCTAssertEqual(lines.count, recs.count + 1)
        XCTAssertEqual(lines.first.map(String.init), ComparisonCSV.columns.joined(separator: ","))
        for required in ["engine", "offered_rate", "delivered_pct", "relay_cpu_us_per_datagram", "relay_syscalls_per_datagram",
                         "p50_us", "p99_us", "relay_stats_cpu_seconds", "relay_proc_cpu_seconds"] {
            XCTAssertTrue(ComparisonCSV.columns.contains(required), required)
        }
        // The quoted error field keeps the column count.
        let quoted = lines[4]
        XCTAssertTrue(quoted.hasSuffix("\"relay said, \"\"no\"\"\""), String(quoted))
        let plain = lines[1].split(separator: ",", omittingEmptySubsequences: false)
        XCTAssertEqual(plain.count, ComparisonCSV.columns.count)
        XCTAssertEqual(plain[ComparisonCSV.columns.firstIndex(of: "relay_cpu_us_per_datagram")!], "5")
    }

    func testSVGIsWellFormedWithOnePolylinePerEnginePerChart() throws {
        let recs = records()
        let cells = CellSummary.summarise(recs, loads: LoadPoint.standard, engines: EngineSetting.all.map(\.name))
        let comparison = Comparison(options: CompareOptions(), log: { _ in })
        let svg = ComparisonChart.render(cpu: comparison.series(cells, \.cpuUs), latency: comparison.series(cells, \.p99),
                                         markerLabel: "2000 voice streams")
        let document = try XMLDocument(xmlString: svg)
        for chart in ["cpu-chart", "latency-chart"] {
            let lines = try document.nodes(forXPath: "//*[local-name()='g'][@id='\(chart)']/*[local-name()='polyline']")
            XCTAssertEqual(lines.count, EngineSetting.all.count, chart)
            let polylines = "//*[local-name()='g'][@id='\(chart)']/*[local-name()='polyline']"
            let engines = try document.nodes(forXPath: polylines + "/@data-engine").compactMap(\.stringValue)
            XCTAssertEqual(engines, EngineSetting.all.map(\.name))
            let points = try document.nodes(forXPath: polylines + "/@points").compactMap(\.stringValue)
            XCTAssertEqual(points.count, EngineSetting.all.count)
            for p in points { XCTAssertEqual(p.split(separator: " ").count, 4, "one point per constant load of 20 streams") }
            let texts = try document.nodes(forXPath: "//*[local-name()='g'][@id='\(chart)']/*[local-name()='text']").compactMap(\.stringValue)
            XCTAssertTrue(texts.contains("offered load (datagrams/s)"))
            XCTAssertTrue(texts.contains("200k"), "x ticks reach the top load")
            XCTAssertTrue(texts.contains("uring+gso"), "legend")
        }
        XCTAssertEqual(ComparisonChart.niceTicks(max: 200_000), [0, 50_000, 100_000, 150_000, 200_000])
        XCTAssertEqual(ComparisonChart.decadeTicks([35, 0, 120_000]), [10, 100, 1000, 10_000, 100_000, 1_000_000])
        XCTAssertEqual(ComparisonChart.label(1_000_000), "1M")
        XCTAssertEqual(ComparisonChart.niceTicks(max: 0.37), [0, 0.1, 0.2, 0.30000000000000004, 0.4])
    }

    func testChartLineFollowsOneStreamCount() throws {
        var options = CompareOptions()
        options.loads = ["50k", "50kx200", "200k", "200kx200"]
        let comparison = Comparison(options: options, log: { _ in })
        let recs = records(engines: EngineSetting.all).filter { $0.run.load.label == "50k" || $0.run.load.label == "200k" }
            + records(engines: EngineSetting.all).filter { $0.run.load.label == "50k" }.map {
                RunRecord(run: PlannedRun(repeatIndex: $0.run.repeatIndex, load: .constant(50_000, streams: 200), engine: $0.run.engine),
                          result: $0.result, error: nil)
            }
        let cells = CellSummary.summarise(recs, loads: comparison.loads, engines: EngineSetting.all.map(\.name))
        XCTAssertEqual(cells.filter { $0.load.streams == 200 }.count, 4)
        for line in comparison.series(cells, \.cpuUs) {
            XCTAssertEqual(line.points.map(\.x), [50_000, 200_000], "\(line.name): the 20-stream loads only")
        }
    }

    func testTableMarkdownAndCPUSaved() {
        let recs = records()
        let cells = CellSummary.summarise(recs, loads: LoadPoint.standard, engines: EngineSetting.all.map(\.name))
        let rows = ComparisonTable.rows(cells)
        XCTAssertEqual(rows.count, 28)
        // perpacket 5 us, mmsg 4.5 us: 10 % saved.
        let mmsg50k = rows.first { $0[0] == "mmsg" && $0[1] == "50k" }!
        XCTAssertEqual(mmsg50k[3], "500", "1000 sent in 2 s")
        XCTAssertEqual(mmsg50k[5], "4.500 (4.500-4.500)")
        XCTAssertEqual(mmsg50k[9], "300", "p99.9")
        XCTAssertEqual(mmsg50k[10], "+10 %")
        XCTAssertEqual(mmsg50k[11], "-", "no C forwarder ran")
        XCTAssertEqual(mmsg50k[12], "2", "runs")
        XCTAssertEqual(rows.first { $0[0] == "perpacket" }![10], "-")
        let checks = Check.standard(loads: LoadPoint.standard, engines: EngineSetting.all.map(\.name))
        let md = ComparisonReport.markdown(records: recs, cells: cells,
                                           machine: MachineInfo(kernel: "6.1.0", cpuModel: "Test CPU", cores: 2, date: "2026-01-01"),
                                           options: CompareOptions(), loads: LoadPoint.standard, placement: "the relay on CPU 1", checks: checks)
        XCTAssertTrue(md.contains("Machine: CPU Test CPU, 2 cores, kernel `6.1.0`, 2026-01-01.\n\nPlacement: the relay on CPU 1."), md)
        XCTAssertTrue(md.contains("| /v1/stats CPU s | /proc CPU s |"))
        XCTAssertTrue(md.contains("## Failed runs"))
        // The checks: perpacket 5 us, mmsg 4.5, uring 4.0, uring+gso 3.5 per datagram, the same in both rounds.
        XCTAssertFalse(checks.contains { $0.baseline == "c-perpacket" }, "no C forwarder ran")
        XCTAssertTrue(md.contains("| mmsg: CPU saved | 50k | perpacket | +10.0 % | +10.0 to +10.0 % (50 %) | 2 | at least 25 % | not met |"), md)
        XCTAssertTrue(md.contains("| uring+gso: CPU saved | 100kx2 | perpacket | +30.0 % | +30.0 to +30.0 % (50 %) | 2 | at least 40 % | not met |"), md)
        XCTAssertTrue(md.contains("| uring: p99 added | 10k | perpacket |"), md)
    }

    func testCPUSavedAgainstTheCPerPacketForwarder() {
        // perpacket 5 us, mmsg 4.5, uring 4.0, uring+gso 3.5, c-perpacket 3.0 per datagram.
        let engines = EngineSetting.all + [EngineSetting.cPerPacket]
        let recs = records(engines: engines)
        let cells = CellSummary.summarise(recs, loads: LoadPoint.standard, engines: engines.map(\.name))
        let rows = ComparisonTable.rows(cells)
        XCTAssertEqual(rows.count, 35)
        let gso50k = rows.first { $0[0].hasPrefix("uring+gso") && $0[1] == "50k" }!
        XCTAssertEqual(gso50k[10], "+30 %")
        XCTAssertEqual(gso50k[11], "-17 %")
        let c50k = rows.first { $0[0] == "c-perpacket" && $0[1] == "50k" }!
        XCTAssertEqual(c50k[10], "+40 %")
        XCTAssertEqual(c50k[11], "-")
        let checks = Check.standard(loads: LoadPoint.standard, engines: engines.map(\.name))
        let md = ComparisonReport.markdown(records: recs, cells: cells,
                                           machine: MachineInfo(kernel: "6.1.0", cpuModel: "Test CPU", cores: 2, date: "2026-01-01"),
                                           options: CompareOptions(), loads: LoadPoint.standard, placement: "the relay on CPU 1", checks: checks)
        XCTAssertTrue(md.contains("c-perpacket is the C reference forwarder"), md)
        XCTAssertTrue(md.contains("| mmsg: CPU saved | 50k | c-perpacket | -50.0 % | -50.0 to -50.0 % (50 %) | 2 | at least 25 % | not met |"), md)
    }

    func testOneNoisyRepeatLeavesTheLatencyCheckInconclusive() {
        // One noisy repeat of uring (p99 5 ms) must not decide the check either way: its median
        // is 10 us over perpacket's, but three repeats cannot exclude the noisy one.
        let p99s: [String: [Double]] = ["perpacket": [100, 100, 100], "mmsg": [100, 100, 100], "uring": [100, 5000, 110], "uring+gso": [100, 100, 100]]
        var seen: [String: Int] = [:]
        let recs = comparisonPlan(repeats: 3, loads: [LoadPoint.constant(10_000)], engines: EngineSetting.all).map { run in
            var r = LoadResult()
            let n = seen[run.engine.name, default: 0]
            seen[run.engine.name] = n + 1
            r.latencyUs = [50, 80, p99s[run.engine.name]![n], 900, 900]
            return RunRecord(run: run, result: r, error: nil)
        }
        let checks = Check.standard(loads: [LoadPoint.constant(10_000)], engines: EngineSetting.all.map(\.name))
        XCTAssertEqual(checks.map(\.engine), ["mmsg", "uring", "uring+gso"])
        let text = ChecksTable.markdown(checks, records: recs, rule: StoppingRule(minimum: 3, maximum: 3))
        XCTAssertTrue(text.contains("| uring: p99 added | 10k | perpacket | +10.0 us | +0.0 to +4900.0 us (75 %) | 3 | at most 50 us | inconclusive |"), text)
        XCTAssertTrue(text.contains("| mmsg: p99 added | 10k | perpacket | +0.0 us | +0.0 to +0.0 us (75 %) | 3 | at most 50 us | met |"), text)
    }

    func testCPUModelFromCpuinfo() {
        XCTAssertEqual(MachineInfo.cpuModel(cpuinfo: "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: x\n"), "AMD EPYC 7B13")
        XCTAssertEqual(MachineInfo.cpuModel(cpuinfo: "nothing"), "unknown")
    }

    func testResultJSONHasEveryField() throws {
        var r = LoadResult()
        r.sent = 100
        r.received = 97
        r.relay = RelayDelta(before: RelayStats(engine: "mmsg", packetsIn: 10, packetsOut: 10, cpuUserSeconds: 1, cpuSystemSeconds: 1, syscalls: 5),
                             after: RelayStats(engine: "mmsg", packetsIn: 110, packetsOut: 107, cpuUserSeconds: 1.001, cpuSystemSeconds: 1.001, syscalls: 55))
        let text = r.json.rendered
        XCTAssertFalse(text.contains("\n"))
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        for key in ["sent", "received", "lost", "reordered", "duplicated", "latency_us", "jitter_us", "ecn_kept", "dscp_kept",
                    "generator_cpu_seconds", "relay_cpu_ns_per_packet", "relay_syscalls_per_packet", "relay_engine",
                    "offered_rate", "seconds"] {
            XCTAssertNotNil(object[key], key)
        }
        let latency = try XCTUnwrap(object["latency_us"] as? [String: Any])
        XCTAssertEqual(Set(latency.keys), ["p50", "p90", "p99", "p999", "max"])
        XCTAssertEqual(object["lost"] as? Int, 3)
        XCTAssertEqual((object["relay_cpu_ns_per_packet"] as? Double) ?? 0, 20_000, accuracy: 1e-6)
        XCTAssertEqual(object["relay_syscalls_per_packet"] as? Double, 0.5)
        XCTAssertEqual(object["relay_engine"] as? String, "mmsg")
        // Without a relay the relay figures are null, not missing.
        let bare = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(LoadResult().json.rendered.utf8)) as? [String: Any])
        XCTAssertTrue(bare["relay_cpu_ns_per_packet"] is NSNull)
        XCTAssertEqual(JSONValue.string("a\"b\\\n\u{1}").rendered, "\"a\\\"b\\\\\\n\\u0001\"")
    }
}
