@testable import LoadComparison
import XCTest
@testable import LoadGen
import RelayObservation

/// The verdicts of `compare`'s checks (met, not met, inconclusive from paired repeats and the
/// interval of their median) and the rule that says when a load needs no more rounds.
final class CheckTests: XCTestCase {
    let load = LoadPoint.constant(100_000)
    var saving: Check { Check(engine: "uring", baseline: "perpacket", load: load, aim: .savingAtLeast(25)) }

    /// Records of `engine` and perpacket at `load`, one pair per round, with these CPU figures
    /// (us per datagram) for the engine against perpacket's 4 us; a million datagrams each, so
    /// the figures come back exactly.
    func records(engine: String = "uring", us: [Double], baseline: Double = 4) -> [RunRecord] {
        us.enumerated().flatMap { round, mine in
            [(engine, mine), ("perpacket", baseline)].map { name, cpu in
                var r = LoadResult()
                r.relay = RelayDelta(before: RelayStats(engine: name, packetsIn: 0, packetsOut: 0, cpuUserSeconds: 0, cpuSystemSeconds: 0, syscalls: 0),
                                     after: RelayStats(engine: name, packetsIn: 1_000_000, packetsOut: 1_000_000, cpuUserSeconds: cpu,
                                                       cpuSystemSeconds: 0, syscalls: 1000))
                let setting = EngineSetting(name: name, arguments: [])
                return RunRecord(run: PlannedRun(repeatIndex: round, load: load, engine: setting), result: r, error: nil)
            }
        }
    }

    func testTheIntervalOfTheMedianWidensWithFewRepeatsAndNarrowsWithMore() throws {
        // Too few repeats for 90 %: the whole range, its coverage said.
        let three = try XCTUnwrap(MedianInterval([3, 1, 2]))
        XCTAssertEqual([three.low, three.median, three.high], [1, 2, 3])
        XCTAssertEqual(three.coverage, 0.75)
        XCTAssertEqual(try XCTUnwrap(MedianInterval([1, 2, 3, 4])).coverage, 0.875)
        // Five: still the range, now at 15/16.
        let five = try XCTUnwrap(MedianInterval([5, 1, 4, 2, 3]))
        XCTAssertEqual([five.low, five.high], [1, 5])
        XCTAssertEqual(five.coverage, 0.9375)
        // Eight: the second smallest to the second largest (1 - 2 x 9/256 = 0.93).
        let eight = try XCTUnwrap(MedianInterval([8, 1, 7, 2, 6, 3, 5, 4]))
        XCTAssertEqual([eight.low, eight.median, eight.high], [2, 4.5, 7])
        XCTAssertEqual(eight.coverage, 1 - 18.0 / 256, accuracy: 1e-12)
        XCTAssertEqual(eight.spread, 5)
        XCTAssertEqual(MedianInterval.rank(count: 12), 3, "1 - 2 x 79/4096 = 0.96; k = 4 gives 0.85")
        XCTAssertNil(MedianInterval([]))
        XCTAssertNil(MedianInterval([.nan]))
    }

    func testSavingsArePairedWithinARound() {
        // Drift between rounds (perpacket 4 then 8 us) cancels within each round's pair.
        let recs = records(us: [2, 4], baseline: 4).map { r -> RunRecord in
            guard r.run.repeatIndex == 1 else { return r }
            var result = r.result!
            let cpu = r.run.engine.name == "perpacket" ? 8.0 : 4.0
            result.relay = RelayDelta(before: RelayStats(engine: "x", packetsIn: 0, packetsOut: 0, cpuUserSeconds: 0, cpuSystemSeconds: 0, syscalls: 0),
                                      after: RelayStats(engine: "x", packetsIn: 1_000_000, packetsOut: 1_000_000, cpuUserSeconds: cpu, cpuSystemSeconds: 0, syscalls: 0))
            return RunRecord(run: r.run, result: result, error: nil)
        }
        XCTAssertEqual(saving.samples(recs), [50, 50])
        // A round where one side failed has no pair.
        let failed = records(us: [2, 3]).map { $0.run.repeatIndex == 1 && $0.run.engine.name == "perpacket" ? RunRecord(run: $0.run, result: nil, error: "x") : $0 }
        XCTAssertEqual(saving.samples(failed), [50])
    }

    func testVerdictsFromTheIntervalAgainstTheAim() throws {
        // uring against perpacket's 4 us: 3 us saves 25 %, 2 us 50 %, 3.6 us 10 %.
        func verdict(_ us: [Double]) throws -> Verdict { saving.verdict(try XCTUnwrap(MedianInterval(saving.samples(records(us: us))))) }
        XCTAssertEqual(try verdict([2, 2.2, 2.4]), .met)
        XCTAssertEqual(try verdict([3, 2, 2.5]), .met, "the aim itself counts as met")
        XCTAssertEqual(try verdict([3.6, 3.5, 3.7]), .notMet)
        XCTAssertEqual(try verdict([2, 3.6, 2.1]), .inconclusive, "one repeat below the aim, with three, is not excluded")
        // With eight, one outlier on each side no longer decides: the interval drops the extremes.
        XCTAssertEqual(try verdict([2, 2.1, 2.2, 2.3, 2.4, 2.2, 3.9, 0.5]), .met)

        let latency = Check(engine: "mmsg", baseline: "perpacket", load: Check.latencyLoad, aim: .addedLatencyAtMost(50))
        func interval(_ values: [Double]) throws -> MedianInterval { try XCTUnwrap(MedianInterval(values)) }
        XCTAssertEqual(latency.verdict(try interval([10, -5, 50])), .met)
        XCTAssertEqual(latency.verdict(try interval([60, 51, 90])), .notMet)
        XCTAssertEqual(latency.verdict(try interval([10, 20, 900])), .inconclusive)
    }

    func testTheStoppingRule() throws {
        let rule = StoppingRule(minimum: 3, maximum: 8)
        func settled(_ us: [Double]) -> Bool {
            rule.settled([saving], records: records(us: us), rounds: us.count)
        }
        XCTAssertFalse(settled([2, 2]), "never before the minimum, however clear")
        XCTAssertTrue(settled([2, 2.1, 2.2]), "met: 45 to 50 % saved, clear of the aim by more than half the bound")
        XCTAssertTrue(settled([3.6, 3.7, 3.5]), "not met: 7.5 to 12.5 %, clear on the other side")
        XCTAssertFalse(settled([2, 3.6, 2.1]), "inconclusive and wide (10 % to 50 % saved): repeat")
        // Three repeats on one side of the aim but near it: the verdict would be met, but a
        // figure at the aim gives that one time in four, so repeat.
        XCTAssertFalse(settled([2.9, 2.85, 2.8]), "27.5 to 30 % saved")
        XCTAssertEqual(saving.verdict(MedianInterval(saving.samples(records(us: [2.9, 2.85, 2.8])))!), .met)
        XCTAssertTrue(settled([2.9, 2.85, 2.8, 2.9, 2.85]), "five: the interval holds 90 %, and it is clear of the aim")
        // Within the bound (10 points) but holding the aim: the figure is too near the aim to
        // call, and more rounds would not change that much: stop, inconclusive. Only once the
        // interval holds 90 %: a narrow range of three may be luck.
        XCTAssertFalse(settled([3.1, 2.9, 3.0]), "22.5 to 27.5 % saved, three repeats")
        XCTAssertTrue(settled([3.1, 2.9, 3.0, 3.05, 2.95]), "22.5 to 27.5 % saved, five repeats")
        XCTAssertTrue(settled([2, 3.6, 2.1, 3.6, 2, 3.6, 2.1, 3.6]), "the maximum stops it as it stands")
        XCTAssertTrue(StoppingRule(minimum: 3, maximum: 3).settled([saving], records: records(us: [2, 3.6, 2.1]), rounds: 3))
        XCTAssertFalse(rule.settled([saving], records: [], rounds: 4), "nothing measured yet")
        XCTAssertTrue(rule.settled([], records: [], rounds: 3), "a load without checks: the minimum only")
        XCTAssertEqual(StoppingRule(minimum: 5, maximum: 2).maximum, 5, "the maximum is at least the minimum")
    }

    func testOnlyTheUnsettledChecksAskForMoreRounds() {
        let rule = StoppingRule(minimum: 3, maximum: 8)
        let mmsg = Check(engine: "mmsg", baseline: "perpacket", load: load, aim: .savingAtLeast(25))
        // uring clearly met (2 us against 4), mmsg wide across its aim (10 % to 50 % saved).
        let recs = records(us: [2, 2.1, 2.2]) + records(engine: "mmsg", us: [2, 3.6, 2.1]).filter { $0.run.engine.name == "mmsg" }
        XCTAssertEqual(rule.unsettled([saving, mmsg], records: recs, rounds: 3), [mmsg])
        XCTAssertEqual(rule.unsettled([saving, mmsg], records: recs, rounds: 2), [saving, mmsg], "before the minimum, every check")
        XCTAssertEqual(rule.unsettled([saving, mmsg], records: recs, rounds: 8), [], "at the maximum, none")
    }

    func testRoundsAfterTheMinimumRunOnlyTheUnsettledLoads() {
        let loads = [LoadPoint.constant(10_000), LoadPoint.constant(50_000), LoadPoint.constant(200_000)]
        let round = comparisonRound(4, loads: [loads[1]], engines: EngineSetting.all)
        XCTAssertEqual(round.count, 4)
        XCTAssertEqual(Set(round.map(\.engine.name)), Set(EngineSetting.all.map(\.name)), "every engine at the load, so each check stays paired")
        XCTAssertTrue(round.allSatisfy { $0.repeatIndex == 4 && $0.load == loads[1] })
        // Only the two sides of the checks still open there.
        let pair = comparisonRound(5, loads: [loads[2]], engines: EngineSetting.all) { _, engine in ["perpacket", "uring+gso"].contains(engine.name) }
        XCTAssertEqual(Set(pair.map(\.engine.name)), ["perpacket", "uring+gso"])
        XCTAssertEqual(pair.count, 2)
        XCTAssertEqual(comparisonPlan(repeats: 2, loads: loads, engines: EngineSetting.all),
                       comparisonRound(0, loads: loads, engines: EngineSetting.all) + comparisonRound(1, loads: loads, engines: EngineSetting.all))
    }

    func testTheStandardChecks() {
        let names = (EngineSetting.all + [EngineSetting.cPerPacket]).map(\.name)
        let checks = Check.standard(loads: LoadPoint.standard, engines: names)
        // Latency at 10k for three engines; CPU at every load from 50k/s (50k, 100k, 200k,
        // 100kx2, voice2000) for three engines against two baselines.
        XCTAssertEqual(checks.count, 3 + 5 * 3 * 2)
        XCTAssertEqual(Set(checks.map(\.load.label)), ["10k", "50k", "100k", "200k", "100kx2", "voice2000"])
        XCTAssertEqual(checks.first { $0.engine == "uring+gso" && $0.load.label == "50k" }?.aim, .savingAtLeast(40))
        XCTAssertEqual(checks.first { $0.engine == "mmsg" && $0.load.label == "50k" }?.aim, .savingAtLeast(25))
        XCTAssertTrue(Check.standard(loads: LoadPoint.standard, engines: ["perpacket"]).isEmpty)
    }
}
