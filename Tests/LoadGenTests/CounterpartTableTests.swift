@testable import BenchSupport
@testable import LoadComparison
@testable import RelayObservation
import XCTest
@testable import LoadGen

/// The table of the relay against the C reference of its backend, on made-up figures.
final class CounterpartTableTests: XCTestCase {
    /// A run that measured `us` of CPU per datagram (1000 datagrams), or failed when nil.
    func record(_ engine: EngineSetting, _ load: LoadPoint, round: Int, us: Double?, delivered: UInt64 = 1000) -> RunRecord {
        let run = PlannedRun(repeatIndex: round, load: load, engine: engine)
        guard let us else { return RunRecord(run: run, result: nil, error: "refused") }
        var r = LoadResult()
        r.sent = 1000
        r.received = delivered
        r.seconds = 1
        r.relay = RelayDelta(before: RelayStats(engine: "x", packetsIn: 0, packetsOut: 0, cpuUserSeconds: 0, cpuSystemSeconds: 0, syscalls: 0),
                             after: RelayStats(engine: "x", packetsIn: 1000, packetsOut: 1000, cpuUserSeconds: us / 1000, cpuSystemSeconds: 0, syscalls: 0))
        return RunRecord(run: run, result: r, error: nil)
    }

    let mmsg = EngineSetting.all[1], uringGSO = EngineSetting.all[3], perpacket = EngineSetting.all[0]

    func testRatiosArePairedByRepeatNotTakenFromMedians() throws {
        let load = LoadPoint.constant(50_000, streams: 200), cMMSG = EngineSetting.reference(for: mmsg)
        // relay 2, 4, 6 us; C 1, 5, 5 us: per repeat 2.0, 0.8, 1.2 (median 1.2), where the
        // medians' ratio would say 4/5 = 0.8.
        let records: [RunRecord] = zip([2.0, 4, 6], [1.0, 5, 5]).enumerated().flatMap { round, us in
            [record(mmsg, load, round: round, us: us.0), record(cMMSG, load, round: round, us: us.1)]
        }
        let cells = CellSummary.summarise(records, loads: [load], engines: ["mmsg", "c-mmsg"])
        let pairs = CounterpartTable.pairs(records: records, cells: cells)
        XCTAssertEqual(pairs.count, 1)
        let ratio = try XCTUnwrap(pairs.first?.ratio)
        XCTAssertEqual(ratio.median, 1.2, accuracy: 1e-9)
        XCTAssertEqual(ratio.min, 0.8, accuracy: 1e-9)
        XCTAssertEqual(ratio.max, 2.0, accuracy: 1e-9)
        XCTAssertEqual(CounterpartTable.rows(pairs), [["50kx200", "mmsg", "4.000 (2.000-6.000)", "5.000 (1.000-5.000)",
                                                      "1.200x (0.800-2.000)", "3", "100.00, 100.00", "no"]])
    }

    func testOnlyRepeatsWhereBothSidesWereMeasuredArePaired() {
        let load = LoadPoint.constant(200_000), cGSO = EngineSetting.reference(for: uringGSO)
        // Repeat 2's C run failed: its relay run has no partner. Delivered 90 % on the C side.
        let records = [
            record(uringGSO, load, round: 0, us: 2.0), record(cGSO, load, round: 0, us: 2.0, delivered: 900),
            record(uringGSO, load, round: 1, us: 2.1), record(cGSO, load, round: 1, us: 2.0, delivered: 900),
            record(uringGSO, load, round: 2, us: 9.0), record(cGSO, load, round: 2, us: nil),
            // perpacket ran without its C counterpart: no row.
            record(perpacket, load, round: 0, us: 4.0),
        ]
        let cells = CellSummary.summarise(records, loads: [load], engines: ["perpacket", "uring+gso", "c-uring+gso"])
        let rows = CounterpartTable.rows(CounterpartTable.pairs(records: records, cells: cells))
        XCTAssertEqual(rows, [["200k", "uring+gso", "2.100 (2.000-9.000)", "2.000 (2.000-2.000)", "1.025x (1.000-1.050)", "2",
                               "100.00, 90.00", "yes"]])
    }

    func testTheReportHasTheSectionOnlyWhenAPairRan() {
        let load = LoadPoint.constant(50_000), cMMSG = EngineSetting.reference(for: mmsg)
        let machine = MachineInfo(kernel: "6.1.0", cpuModel: "Test CPU", cores: 2, date: "2026-01-01")
        let alone = [record(mmsg, load, round: 0, us: 3)]
        let both = alone + [record(cMMSG, load, round: 0, us: 3)]
        func report(_ records: [RunRecord]) -> String {
            ComparisonReport.markdown(records: records, cells: CellSummary.summarise(records, loads: [load], engines: ["mmsg", "c-mmsg"]),
                                      machine: machine, options: CompareOptions(), loads: [load], placement: "test placement", checks: [])
        }
        XCTAssertFalse(report(alone).contains("## The relay against the C reference of its backend"))
        let md = report(both)
        XCTAssertTrue(md.contains("## The relay against the C reference of its backend"), md)
        XCTAssertTrue(md.contains("| 50k | mmsg | 3.000 (3.000-3.000) | 3.000 (3.000-3.000) | 1.000x (1.000-1.000) | 1 | 100.00, 100.00 | yes |"), md)
        XCTAssertTrue(md.contains("c-mmsg is the C reference forwarder"), md)
    }
}
