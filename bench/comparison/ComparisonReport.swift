import BenchSupport
import Foundation
import LoadGen
import RelayObservation

/// OUT.md: what was run, on what, the summary table, and the CPU cross-check.
public enum ComparisonReport {
    public static func markdown(records: [RunRecord], cells: [CellSummary], machine: MachineInfo,
                                options: CompareOptions, loads: [LoadPoint]) -> String {
        var s = "# mediarelay engines: CPU per datagram, batched against per-packet\n\n"
        s += "Machine: kernel `\(machine.kernel)`, CPU \(machine.cpuModel), \(machine.cores) cores, \(machine.date).\n\n"
        s += "Each run starts `\(options.server) --engine E --gso on|off --gro on|off --batch-size 64 --max-datagram-size 2048 --workers \(options.workers.map(String.init).joined(separator: "|"))`"
        if options.relayHost != "127.0.0.1" { s += " on \(options.relayHost)\(options.serverPrefix.isEmpty ? "" : " under `\(options.serverPrefix.joined(separator: " "))`")" }
        s += ", offers the load for "
        s += "\(String(format: "%g", options.seconds)) s from `mediarelay-load` in the same machine, and reads GET /v1/stats "
        s += "before and after: CPU per datagram = Δ(cpu_user_seconds + cpu_system_seconds) / Δpackets_in, "
        s += "syscalls per datagram = Δsyscalls / Δpackets_in. \(options.repeats) repeat(s), interleaved (every repeat "
        s += "runs every load on every engine, engine order rotating) so drift falls on all engines. "
        s += "Loads: " + loads.map { "\($0.label) (\($0.profile.rawValue), \($0.streams) streams, \(Int($0.offeredRate)) datagrams/s\($0.senderGSO ? ", each frame sent as one GSO send" : ""))" }.joined(separator: ", ")
        var references: [String] = []
        for r in records where r.run.engine.reference && !references.contains(r.run.engine.name) { references.append(r.run.engine.name) }
        if !references.isEmpty {
            s += ". \(references.joined(separator: ", ")) \(references.count == 1 ? "is" : "are") the C reference forwarder "
            s += "(bench/reference/forwarder.c, `--backend B --legs N`; c-NAME with the backend, GSO and GRO of the relay's NAME, "
            s += "c-perpacket the C per-packet forwarder) with the relay's batch and buffer sizes: "
            s += "the same flows as the relay's sessions (a socket pair per session, each leg latching onto "
            s += "its first source, the TOS byte copied), driven by the generator exactly as in session mode; its CPU is its "
            s += "process CPU clock (one thread) and its datagrams its own counter, over the same interval"
        }
        s += ". Latency excludes the first \(String(format: "%g", Comparison.warmup(seconds: options.seconds))) s of each run (warm-up); loss and order do not. Sender and receiver share the machine with the relay, and on loopback the kernel work of delivering each datagram is charged to whoever sends it.\n\n"
        s += ComparisonTable.markdown(cells) + "\n\n"
        s += "Medians over repeats. sent/s below offered/s means the machine (generator and relay share its cores) could not "
        s += "keep up; delivered % is received / sent. CPU saved = 1 - median(engine) / median(perpacket) at the same load. "
        let base = (options.out as NSString).lastPathComponent
        s += "Charts: [\(base).svg](\(base).svg); every run: [\(base).csv](\(base).csv).\n\n"
        s += CounterpartTable.markdown(CounterpartTable.pairs(records: records, cells: cells))
        s += aims(cells) + "\n"
        s += cpuCheck(records)
        let failures = records.filter { $0.error != nil }
        if !failures.isEmpty {
            s += "\n## Failed runs\n\n"
            for f in failures { s += "- repeat \(f.run.repeatIndex + 1), \(f.run.engine.name), \(f.run.load.label): \(f.error!)\n" }
        }
        return s
    }

    /// The issue's honesty checks against the medians: batching must not cost latency (the
    /// median over the interleaved repeats of each run's p99 at 10k/s within 50 us of
    /// perpacket's; p99.9 shown beside it), and the CPU aims at 50k/s and above (batched at
    /// least 25 % saved, GSO at least 40 %), against our per-packet backend and, when it ran,
    /// the C per-packet forwarder. Reported as measured, met or not.
    public static func aims(_ cells: [CellSummary]) -> String {
        var s = "## Checks\n\n"
        func cell(_ engine: String, _ label: String) -> CellSummary? { cells.first { $0.engine == engine && $0.load.label == label } }
        if let baseCell = cell("perpacket", "10k"), let base = baseCell.p99?.median {
            s += "Latency at 10k datagrams/s, the median over \(baseCell.runs) interleaved repeat(s) of each run's p99 against "
            s += "perpacket's \(Int(base)) us (must be within 50 us; p99.9 in brackets, perpacket's \(Int(baseCell.p999?.median ?? .nan)) us):"
            for engine in ["mmsg", "uring", "uring+gso"] {
                guard let mine = cell(engine, "10k"), let p99 = mine.p99?.median else { continue }
                let delta = p99 - base
                s += " \(engine) \(Int(p99)) us (\(delta >= 0 ? "+" : "")\(Int(delta)), \(delta <= 50 ? "ok" : "NOT MET"); p99.9 \(Int(mine.p999?.median ?? .nan)) us);"
            }
            s += "\n\n"
        }
        s += "CPU saved per datagram at 50k/s and above (aim: batched at least 25 %, GSO at least 40 %):\n\n"
        let labels = loadLabels(of: cells, where: { $0.offeredRate >= 50_000 })
        for label in loadLabels(of: cells, where: { $0.profile == .video }) {
            guard let plainCPU = cell("mmsg+gso", label)?.cpuUs?.median, let groCPU = cell("mmsg+gso+gro", label)?.cpuUs?.median else { continue }
            s += "GRO at \(label): mmsg+gso+gro \(String(format: "%.2f", groCPU)) us per datagram against mmsg+gso's "
            s += "\(String(format: "%.2f", plainCPU)) us (\(String(format: "%.1f", (1 - groCPU / plainCPU) * 100)) % saved).\n\n"
        }
        let baselines = ["perpacket"] + (cells.contains { $0.engine == EngineSetting.cPerPacket.name } ? [EngineSetting.cPerPacket.name] : [])
        for baseline in baselines {
            if baselines.count > 1 {
                s += baseline == "perpacket" ? "Against our per-packet backend:\n\n"
                    : "\nAgainst the C per-packet forwarder (bench/reference; the saving that is batching's alone):\n\n"
            }
            for engine in ["mmsg", "uring", "uring+gso"] {
                let aim = engine.hasSuffix("gso") ? 40.0 : 25.0
                var parts: [String] = []
                for label in labels {
                    guard let base = cell(baseline, label)?.cpuUs?.median, let mine = cell(engine, label)?.cpuUs?.median else { continue }
                    let saved = (1 - mine / base) * 100
                    parts.append("\(label) \(String(format: "%.1f", saved)) % (\(saved >= aim ? "met" : "not met"))")
                }
                s += "- \(engine): " + parts.joined(separator: ", ") + "\n"
            }
        }
        return s
    }

    /// The labels of the loads that match, in table order, once each.
    static func loadLabels(of cells: [CellSummary], where matches: (LoadPoint) -> Bool) -> [String] {
        var labels: [String] = []
        for c in cells where matches(c.load) && !labels.contains(c.load.label) { labels.append(c.load.label) }
        return labels
    }

    /// The relay's CPU from /proc/PID/stat against its own /v1/stats, per engine and in total.
    public static func cpuCheck(_ records: [RunRecord]) -> String {
        var s = "## CPU cross-check: /proc/PID/stat against /v1/stats\n\n"
        s += "Same interval, same process (for c-perpacket the \"stats\" figure is its process CPU clock). /proc counts clock ticks of 1/\(ProcessCPU.ticksPerSecond) s, so short runs differ by up to a tick or two.\n\n"
        s += "| engine | runs | /v1/stats CPU s | /proc CPU s | /proc ÷ stats |\n|---|---|---|---|---|\n"
        var engines: [String] = []
        for r in records where !engines.contains(r.run.engine.name) { engines.append(r.run.engine.name) }
        var totalStats = 0.0, totalProc = 0.0
        for engine in engines + ["all"] {
            let mine = records.filter { ($0.run.engine.name == engine || engine == "all") }
                .compactMap { r -> (Double, Double)? in
                    guard let stats = r.result?.relay?.cpuSeconds, let proc = r.result?.relayProcCPUSeconds else { return nil }
                    return (stats, proc)
                }
            let stats = mine.reduce(0) { $0 + $1.0 }, proc = mine.reduce(0) { $0 + $1.1 }
            if engine == "all" { totalStats = stats; totalProc = proc }
            s += "| \(engine) | \(mine.count) | \(String(format: "%.3f", stats)) | \(String(format: "%.3f", proc)) | "
            s += (stats > 0 ? String(format: "%.3f", proc / stats) : "-") + " |\n"
        }
        if totalStats > 0 {
            let off = abs(totalProc / totalStats - 1) * 100
            s += "\nOverall the two agree within \(String(format: "%.1f", off)) % (\(off <= 10 ? "within" : "OUTSIDE") the 10 % bound).\n"
        }
        return s
    }
}
