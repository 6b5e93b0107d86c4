import LoadGen
/// One finished run of the comparison: the plan entry plus what was measured (or why not).
public struct RunRecord: Sendable {
    public let run: PlannedRun
    public let result: LoadResult?
    public let error: String?

    public init(run: PlannedRun, result: LoadResult?, error: String?) {
        self.run = run
        self.result = result
        self.error = error
    }

    public var relayCPUUsPerDatagram: Double? { result?.relay.map { $0.cpuNsPerPacket / 1000 } }
    public var syscallsPerDatagram: Double? { result?.relay?.syscallsPerPacket }
    public var deliveredPercent: Double? { result.map { $0.deliveredFraction * 100 } }
    /// Datagrams/s the generator managed to send; below the offered rate when the machine
    /// (generator and relay share it) could not keep up.
    public var sentRate: Double? { result.flatMap { $0.seconds > 0 ? Double($0.sent) / $0.seconds : nil } }
    public var p50Us: Double? { result?.latencyUs[0] }
    public var p99Us: Double? { result?.latencyUs[2] }
    public var p999Us: Double? { result?.latencyUs[3] }
}

/// The runs of one engine at one load, summarised over repeats.
public struct CellSummary: Sendable {
    public let engine: String
    public let load: LoadPoint
    public let runs: Int
    public let delivered: Summary?
    public let sentRate: Summary?
    public let cpuUs: Summary?
    public let syscalls: Summary?
    public let p50: Summary?
    public let p99: Summary?
    public let p999: Summary?
    /// Engines the relay reported running (an engine may fall back, e.g. uring to mmsg).
    public let reportedEngines: [String]

    public init(engine: String, load: LoadPoint, records: [RunRecord]) {
        self.engine = engine
        self.load = load
        runs = records.count
        func summary(_ f: (RunRecord) -> Double?) -> Summary? { Summary(records.compactMap(f)) }
        delivered = summary(\.deliveredPercent)
        sentRate = summary(\.sentRate)
        cpuUs = summary(\.relayCPUUsPerDatagram)
        syscalls = summary(\.syscallsPerDatagram)
        p50 = summary(\.p50Us)
        p99 = summary(\.p99Us)
        p999 = summary(\.p999Us)
        var engines: [String] = []
        for r in records { if let e = r.result?.relay?.engine, !engines.contains(e) { engines.append(e) } }
        reportedEngines = engines
    }

    /// Groups records by (load, engine) in the order of `loads` and `engines`; an engine that
    /// did not run at a load (one for some profiles only) has no cell there.
    public static func summarise(_ records: [RunRecord], loads: [LoadPoint], engines: [String]) -> [CellSummary] {
        loads.flatMap { load in
            engines.compactMap { engine in
                let mine = records.filter { $0.run.load == load && $0.run.engine.name == engine }
                return mine.isEmpty ? nil : CellSummary(engine: engine, load: load, records: mine)
            }
        }
    }
}
