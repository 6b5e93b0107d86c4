import BenchSupport
import ClientSockets
import JSONSyntax
import LoadGen
import RelayObservation
import SystemSupport
import Foundation
import Glibc

/// `mediarelay-load compare`: runs the relay per engine and load, interleaved over repeats,
/// and writes OUT.md, OUT.csv and OUT.svg.
public struct Comparison: Sendable {
    public let options: CompareOptions
    public let log: @Sendable (String) -> Void
    /// With `--pin split` or `relay`: where the relay and the generator's threads go (nil if
    /// this machine cannot place them, which `run` refuses).
    let placement: CPUPlacement?

    public init(options: CompareOptions, log: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.log = log
        switch options.pin {
        case .off: placement = nil
        case .split: placement = CPUPlacement.split()
        case .relay: placement = CPUPlacement.alone()
        }
    }

    /// The loads to run: those `--loads` names, the standard ones, or only 100k for the CPU
    /// cross-check (--check).
    public var loads: [LoadPoint] {
        if let names = options.loads { return names.compactMap(LoadPoint.named) }
        return options.check ? [LoadPoint.constant(100_000)] : LoadPoint.standard
    }

    public func run() throws(LoadError) {
        guard access(options.server, X_OK) == 0 else {
            throw LoadError("--server \(options.server): not an executable file (build it first: swift build -c release)")
        }
        if let reference = options.reference, access(reference, X_OK) != 0 {
            throw LoadError("--reference \(reference): not an executable file (build it first: make reference)")
        }
        if options.pin != .off {
            guard let placement else {
                throw LoadError("--pin \(options.pin.rawValue): needs at least two allowed CPUs, and at most 64 (--pin off leaves placement to the scheduler)")
            }
            // This thread's mask is inherited by every thread and process started from here on
            // (the relay and C forwarder are moved to their CPU once they are up).
            do { try CPUPlacement.pin(thread: 0, to: placement.sourceMask) } catch {
                throw LoadError("--pin \(options.pin.rawValue): \(error.message)")
            }
        }
        let engines = self.engines
        let checks = Check.standard(loads: loads, engines: engines.map(\.name))
        let rule = options.stoppingRule
        let began = MonotonicClock.now()
        log("compare: \(placementText); at least \(rule.minimum) and at most \(rule.maximum) interleaved rounds of \(String(format: "%g", options.seconds)) s runs"
            + (options.budget.map { ", none past the minimum that would end after \(Int($0)) s" } ?? ""))
        var records: [RunRecord] = []
        var pending = loads
        // Past the minimum: the engines each unsettled load still needs, the two sides of its
        // unsettled checks (nil: every engine, as in the first rounds).
        var needed: [String: Set<String>]?
        var round = 0
        while !pending.isEmpty {
            let plan = comparisonRound(round, loads: pending, engines: engines) { load, engine in
                needed.map { $0[load.label]?.contains(engine.name) ?? false } ?? true
            }
            if let budget = options.budget, round >= rule.minimum {
                // Past the minimum, a round starts only if it should end within the budget, at
                // the mean length of the runs so far.
                let elapsed = Double(MonotonicClock.now() - began) / 1e9
                let expected = elapsed + elapsed / Double(records.count) * Double(plan.count)
                if expected > budget {
                    log(String(format: "compare: %.0f s spent; another round (%d runs) would end past the %.0f s budget: %@ left as they stand",
                               elapsed, plan.count, budget, pending.map(\.label).joined(separator: ", ")))
                    break
                }
            }
            log("compare: round \(round + 1): \(plan.count) runs at \(pending.map(\.label).joined(separator: ", "))")
            for (i, planned) in plan.enumerated() {
                if interruptRequested.load(ordering: .relaxed) { throw LoadError("compare: interrupted after \(records.count) runs") }
                let record = runAndLog(planned, index: i, of: plan.count)
                records.append(record)
                // A relay that cannot start at all would fail every run: stop early and say why.
                if records.count == 1, record.result == nil { throw LoadError("compare: first run failed: \(record.error ?? "?")") }
            }
            round += 1
            var open: [String: Set<String>] = [:]
            for check in rule.unsettled(checks, records: records, rounds: round) {
                open[check.load.label, default: []].formUnion([check.engine, check.baseline])
            }
            pending = round < rule.minimum ? loads : loads.filter { open[$0.label] != nil }
            needed = round < rule.minimum ? nil : open
        }
        log(String(format: "compare: %d runs in %.0f s", records.count, Double(MonotonicClock.now() - began) / 1e9))
        let cells = CellSummary.summarise(records, loads: loads, engines: engines.map(\.name))
        print(ComparisonTable.text(cells))
        let pairs = CounterpartTable.pairs(records: records, cells: cells)
        if !pairs.isEmpty { print("\n" + ComparisonTable.text(columns: CounterpartTable.columns, rows: CounterpartTable.rows(pairs))) }
        try write(records: records, cells: cells, checks: checks)
        if options.check {
            // One JSON line last on stdout, so a test can assert the agreement without parsing Markdown.
            let pairs = records.compactMap { r -> (Double, Double)? in
                guard let stats = r.result?.relay?.cpuSeconds, let proc = r.result?.relayProcCPUSeconds else { return nil }
                return (stats, proc)
            }
            let stats = pairs.reduce(0) { $0 + $1.0 }, proc = pairs.reduce(0) { $0 + $1.1 }
            print(JSONValue.object([
                ("runs", .integer(Int64(pairs.count))),
                ("stats_cpu_seconds", .number(stats)),
                ("proc_cpu_seconds", .number(proc)),
                ("proc_over_stats", .number(stats > 0 ? proc / stats : .nan)),
            ]).rendered)
        }
    }

    /// What shares which CPU, for the log and the report.
    var placementText: String {
        guard let placement else { return "placement left to the scheduler (--pin off): generator and relay threads may share a CPU" }
        let relay = "the relay (every thread; the C forwarder likewise) on CPU \(placement.forwarderCPU)"
        if placement.sinkMask == placement.forwarderMask {
            return "\(relay) with the generator's receiving thread; the generator's sending thread on CPU \(placement.sourceCPU) (--pin split)"
        }
        let sink = placement.sinkMask == placement.sourceMask ? "its receiving thread beside it" : "its receiving thread on CPU \(placement.sinkCPU)"
        return "\(relay), alone; the generator's sending thread on CPU \(placement.sourceCPU), \(sink) (--pin relay)"
    }

    /// One run, and its line in the log.
    func runAndLog(_ planned: PlannedRun, index i: Int, of count: Int) -> RunRecord {
        let began = MonotonicClock.now()
        let record = runOne(planned)
        let wall = Double(MonotonicClock.now() - began) / 1e9
        if let r = record.result {
            log(String(format: "[%d/%d] %@ %@: delivered %.2f %%, relay %.3f us/datagram, %.3f syscalls/datagram, p99 %.0f us (%.1f s)",
                       i + 1, count, planned.engine.name, planned.load.label, r.deliveredFraction * 100,
                       record.relayCPUUsPerDatagram ?? .nan, record.syscallsPerDatagram ?? .nan, r.latencyUs[2], wall))
        } else {
            log("[\(i + 1)/\(count)] \(planned.engine.name) \(planned.load.label): FAILED: \(record.error ?? "?")")
        }
        return record
    }

    /// The control token of a relay off loopback (`--relay-host`).
    var token: String { "compare-\(getpid())" }

    /// The relay's engines (those `--engines` names, or all), and with `--reference` the C
    /// forwarders: c-perpacket (unless `--engines` leaves it out), or with `--references all`
    /// the counterpart of each relay engine that runs; and any c-NAME `--engines` names. Each at
    /// every worker count asked for (the C forwarder, which has one thread, at one only).
    public var engines: [EngineSetting] {
        let names = options.engines
        let relay = (EngineSetting.all + EngineSetting.videoGRO).filter { names?.contains($0.name) ?? true }
        var references: [EngineSetting] = []
        if options.reference != nil {
            switch options.references {
            case .perpacket: references = names == nil ? [EngineSetting.cPerPacket] : []
            case .all: references = relay.map(EngineSetting.reference(for:))
            }
            references += EngineSetting.references.filter { names?.contains($0.name) == true && !references.contains($0) }
        }
        return options.workers.flatMap { count in (relay + references).filter { count == 1 || !$0.reference }.map { $0.with(workers: count) } }
    }

    func runOne(_ planned: PlannedRun) -> RunRecord {
        if planned.engine.reference { return runReference(planned) }
        let server: ServerProcess
        do {
            let host = options.relayHost
            // Off loopback the relay's control API wants a token: a fresh one per run (the relay
            // runs in a network namespace of the benchmark's own, so the command line is fine).
            let address = host == "127.0.0.1" ? [] : ["--relay-address", host, "--control-token", token]
            server = try ServerProcess(path: options.server, arguments: planned.engine.arguments + address + [
                // The C reference forwarder's fixed sizes (forwarder.c's BATCH and MAX_DATAGRAM),
                // so a relay row and its C counterpart hold the same buffers (with 9000 the
                // relay's uring ring has half the C one's); every load's datagrams fit.
                "--batch-size", "64", "--max-datagram-size", "2048",
                // The `http listening on` line is written at every log level.
                "--workers", String(planned.engine.workers), "--http", "\(host.contains(":") ? "[\(host)]" : host):0",
                "--ports", "40000-44999", "--log-level", "warning",
            ], prefix: options.serverPrefix)
        } catch {
            return RunRecord(run: planned, result: nil, error: error.message)
        }
        defer {
            if server.stop() == nil {
                log("warning: \(planned.engine.name) relay did not exit within 3 s of SIGTERM after the \(planned.load.label) run; killed it")
            }
        }
        if let failure = place(server) { return RunRecord(run: planned, result: nil, error: failure) }
        var o = loadOptions(planned, pid: server.pid)
        o.relay = "http://\(server.http)"
        if options.relayHost != "127.0.0.1" { o.token = token }
        return measure(planned, options: o, server: server)
    }

    /// The C reference forwarder (one backend) serving the same flows as the relay's sessions:
    /// one pair of sockets per session (listed in a file), each latching onto its first source,
    /// driven by the generator exactly as in session mode (same sockets, latching, pacing); its
    /// figures come from its counters file and its process CPU clock instead of /v1/stats.
    func runReference(_ planned: PlannedRun) -> RunRecord {
        let stats = "/tmp/mediarelay-load-\(getpid())-reference.stats"
        let legs = "/tmp/mediarelay-load-\(getpid())-reference.legs"
        unlink(stats)
        defer { unlink(stats); unlink(legs) }
        let server: ServerProcess
        do {
            server = try ServerProcess(path: options.reference!, arguments: planned.engine.arguments + [
                "--listen", "\(options.relayHost.contains(":") ? "[\(options.relayHost)]" : options.relayHost):0",
                "--legs", String(planned.load.streams), "--legs-file", legs, "--stats", stats,
            ], kind: .reference, prefix: options.serverPrefix)
        } catch {
            return RunRecord(run: planned, result: nil, error: error.message)
        }
        defer { server.stop() }
        if let failure = place(server) { return RunRecord(run: planned, result: nil, error: failure) }
        var o = loadOptions(planned, pid: server.pid)
        o.legs = legs
        o.forwarderStats = stats
        o.forwarderEngine = planned.engine.reportedReferenceName
        return measure(planned, options: o, server: server)
    }

    /// With `--pin split`, every thread of the started relay or C forwarder onto the forwarder's
    /// CPU; nil when done (or not asked), else why not.
    func place(_ server: ServerProcess) -> String? {
        guard let placement else { return nil }
        do { try CPUPlacement.pin(process: server.pid, to: placement.forwarderMask) } catch { return "--pin \(options.pin.rawValue): \(error.message)" }
        return nil
    }

    func loadOptions(_ planned: PlannedRun, pid: Int32) -> LoadOptions {
        var o = LoadOptions()
        o.streams = planned.load.streams
        o.profile = planned.load.profile
        o.senderGSO = planned.load.senderGSO
        if planned.load.profile == .constant {
            o.rate = planned.load.rate
            o.size = planned.load.size
        }
        o.seconds = options.seconds
        o.warmup = Self.warmup(seconds: options.seconds)
        o.relayPID = pid
        o.progress = false
        o.placement = placement
        o.receiverSpins = options.pin == .relay
        o.arrivalStamps = options.pin == .relay
        return o
    }

    func measure(_ planned: PlannedRun, options o: LoadOptions, server: ServerProcess) -> RunRecord {
        do {
            let result = try LoadRun(options: o, deleteSessions: false, log: log).run()
            return RunRecord(run: planned, result: result, error: nil)
        } catch {
            let said = server.lastLines.suffix(2).joined(separator: " | ")
            return RunRecord(run: planned, result: nil, error: error.message + (said.isEmpty ? "" : " (relay said: \(said))"))
        }
    }

    /// Seconds at the start of each run left out of latency: 0.3 s, less for very short runs.
    public static func warmup(seconds: Double) -> Double { min(0.3, seconds / 4) }

    func write(records: [RunRecord], cells: [CellSummary], checks: [Check]) throws(LoadError) {
        let out = options.out
        let directory = (out as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let md = ComparisonReport.markdown(records: records, cells: cells, machine: .current(), options: options, loads: loads,
                                           placement: placementText, checks: checks)
        let csv = ComparisonCSV.render(records)
        let svg = ComparisonChart.render(cpu: series(cells, \.cpuUs), latency: series(cells, \.p99),
                                         markerLabel: loads.first { $0.profile == .voice }.map { "\($0.streams) voice streams" } ?? "other profile")
        for (path, text) in [(out + ".md", md), (out + ".csv", csv), (out + ".svg", svg)] {
            do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
                throw LoadError("writing \(path): \(error)")
            }
        }
        log("compare: wrote \(out).md, \(out).csv, \(out).svg")
    }

    /// One line per engine that runs at every load (the video-only GRO pair is in the table),
    /// through the constant loads with the first one's stream count: loads of one rate over 20
    /// and over 200 sessions would put two points on one x (those are left to the tables).
    func series(_ cells: [CellSummary], _ value: KeyPath<CellSummary, Summary?>) -> [ChartSeries] {
        let streams = loads.first { $0.profile == .constant }?.streams
        return engines.filter { $0.profiles == nil }.map { engine in
            let mine = cells.filter { $0.engine == engine.name }
            let line = mine.filter { $0.load.profile == .constant && $0.load.streams == streams }.compactMap { c in c[keyPath: value].map { (x: c.load.offeredRate, y: $0) } }
            let marker = mine.first { $0.load.profile != .constant }.flatMap { c in c[keyPath: value].map { (x: c.load.offeredRate, y: $0) } }
            return ChartSeries(name: engine.name, points: line, marker: marker)
        }
    }
}
