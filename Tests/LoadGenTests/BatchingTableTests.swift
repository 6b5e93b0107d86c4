@testable import LoadComparison
import RelayObservation
import XCTest
@testable import LoadGen

/// The report's counters section: each engine's figures summed over its repeats, from the
/// relay's /v1/stats deltas, and the paragraph's figures taken from the same run.
final class BatchingTableTests: XCTestCase {
    let load = LoadPoint.constant(50_000)

    /// One run of `engine`: 1,000 datagrams in and out, with these calls, turns (all of two or
    /// fewer datagrams unless `big`), system calls and GSO figures.
    func record(_ engine: String, round: Int, calls: Double, turns: Double, syscalls: Double, gso: (Double, Double) = (0, 0)) -> RunRecord {
        var sizes = [Double](repeating: 0, count: 9)
        sizes[1] = turns
        let counters = BatchCounters(receiveCalls: calls, receiveTurns: turns, turnSizes: sizes, gsoSegments: gso.0, gsoSends: gso.1)
        let zero = BatchCounters(receiveCalls: 0, receiveTurns: 0, turnSizes: [Double](repeating: 0, count: 9), gsoSegments: 0, gsoSends: 0)
        var r = LoadResult()
        r.relay = RelayDelta(before: RelayStats(engine: engine, packetsIn: 0, packetsOut: 0, cpuUserSeconds: 0, cpuSystemSeconds: 0, syscalls: 0, batching: zero),
                             after: RelayStats(engine: engine, packetsIn: 1000, packetsOut: 1000, cpuUserSeconds: 0.004, cpuSystemSeconds: 0,
                                               syscalls: syscalls, batching: counters))
        return RunRecord(run: PlannedRun(repeatIndex: round, load: load, engine: EngineSetting(name: engine, arguments: [])), result: r, error: nil)
    }

    func testFiguresAreSummedOverRepeatsAndExplainTheSaving() {
        let records = [0, 1].flatMap { round in
            [record("perpacket", round: round, calls: 1000, turns: 500, syscalls: 2500),
             record("mmsg", round: round, calls: 800, turns: 500, syscalls: 1800),
             record("uring+gso", round: round, calls: 250, turns: 250, syscalls: 100, gso: (600, 100))]
        } + [RunRecord(run: PlannedRun(repeatIndex: 0, load: load, engine: EngineSetting.cPerPacket), result: LoadResult(), error: nil)]
        let cells = CellSummary.summarise(records, loads: [load], engines: ["perpacket", "mmsg", "uring+gso", "c-perpacket"])
        let rows = BatchingTable.rows(records: records, cells: cells)
        XCTAssertEqual(rows.map { $0[1] }, ["perpacket", "mmsg", "uring+gso"], "the C forwarder reports no batching")
        XCTAssertEqual(rows[0], ["50k", "perpacket", "2.50", "1.0", "2.0", "0", "100", "0", "0", "0", "0", "-", "0"])
        XCTAssertEqual(rows[1][3...4], ["1.2", "2.0"], "per call and per turn")
        XCTAssertEqual(rows[2][11...12], ["6.0", "60"], "segments per send, share of datagrams sent as segments")
        let md = BatchingTable.markdown(records: records, cells: cells, fewFlows: ["100kx2"])
        XCTAssertTrue(md.contains("here, at 50k, mmsg's receive calls carried 1.2 datagrams each while its turns held 2.0, and it made "
                                  + "1.80 system calls per datagram against perpacket's 2.50"), md)
        XCTAssertTrue(md.contains("few flows at a high rate (100kx2 above)"), md)
        XCTAssertEqual(BatchingTable.markdown(records: [], cells: [], fewFlows: []), "")
    }
}
