import BenchSupport
import Foundation
import LoadGen
import RelayObservation

/// OUT.md: what was run, on what, the summary table, and the CPU cross-check.
public enum ComparisonReport {
    public static func markdown(records: [RunRecord], cells: [CellSummary], machine: MachineInfo,
                                options: CompareOptions, loads: [LoadPoint], placement: String, checks: [Check]) -> String {
        var s = "# mediarelay engines: CPU per datagram, batched against per-packet\n\n"
        s += "Machine: CPU \(machine.cpuModel), \(machine.cores) cores, kernel `\(machine.kernel)`, \(machine.date).\n\n"
        s += "Placement: \(placement).\n\n"
        let rounds = Set(records.map(\.run.repeatIndex)).count
        s += "Repeats: \(rounds) round(s) in all (at least \(options.repeats), at most \(options.maxRepeats)"
        s += options.budget.map { String(format: ", none past the minimum started that would end after %.0f s", $0) } ?? ""
        s += "); runs per engine and load in the table's \"runs\" column.\n\n"
        s += "Each run starts `\(options.server) --engine E --gso on|off --gro on|off --batch-size 64 --max-datagram-size 2048 --workers \(options.workers.map(String.init).joined(separator: "|"))`"
        if options.relayHost != "127.0.0.1" { s += " on \(options.relayHost)\(options.serverPrefix.isEmpty ? "" : " under `\(options.serverPrefix.joined(separator: " "))`")" }
        s += ", offers the load for "
        s += "\(String(format: "%g", options.seconds)) s from `mediarelay-load` in the same machine, and reads GET /v1/stats "
        s += "before and after: CPU per datagram = Δ(cpu_user_seconds + cpu_system_seconds) / Δpackets_in, "
        s += "syscalls per datagram = Δsyscalls / Δpackets_in. Repeats are interleaved (every round runs each of its "
        s += "loads on every engine, engine order rotating) so drift falls on all engines. "
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
        s += ". Latency excludes the first \(String(format: "%g", Comparison.warmup(seconds: options.seconds))) s of each run (warm-up); loss and order do not. "
        s += latencyMeaning(options.pin)
        s += " On loopback the kernel work of delivering each datagram is charged to whoever sends it: the "
        s += "generator pays for delivery into the relay's sockets, the relay for delivery into the generator's.\n\n"
        s += ChecksTable.markdown(checks, records: records, rule: options.stoppingRule, budget: options.budget)
        s += ComparisonTable.markdown(cells) + "\n\n"
        s += "Medians over repeats. sent/s below offered/s means the machine (generator and relay share its cores) could not "
        s += "keep up; delivered % is received / sent. CPU saved = 1 - median(engine) / median(perpacket) at the same load. "
        let base = (options.out as NSString).lastPathComponent
        s += "Charts: [\(base).svg](\(base).svg); every run: [\(base).csv](\(base).csv).\n\n"
        s += CounterpartTable.markdown(CounterpartTable.pairs(records: records, cells: cells))
        s += BatchingTable.markdown(records: records, cells: cells, fewFlows: loads.filter { $0.profile == .constant && $0.streams < 20 }.map(\.label))
        s += gro(cells)
        s += cpuCheck(records)
        let failures = records.filter { $0.error != nil }
        if !failures.isEmpty {
            s += "\n## Failed runs\n\n"
            for f in failures { s += "- repeat \(f.run.repeatIndex + 1), \(f.run.engine.name), \(f.run.load.label): \(f.error!)\n" }
        }
        return s
    }

    /// What the relay's GRO saves at video loads, mmsg+gso+gro against mmsg+gso.
    public static func gro(_ cells: [CellSummary]) -> String {
        func cell(_ engine: String, _ label: String) -> CellSummary? { cells.first { $0.engine == engine && $0.load.label == label } }
        var s = ""
        for label in loadLabels(of: cells, where: { $0.profile == .video }) {
            guard let plainCPU = cell("mmsg+gso", label)?.cpuUs?.median, let groCPU = cell("mmsg+gso+gro", label)?.cpuUs?.median else { continue }
            s += "GRO at \(label): mmsg+gso+gro \(String(format: "%.2f", groCPU)) us per datagram against mmsg+gso's "
            s += "\(String(format: "%.2f", plainCPU)) us (\(String(format: "%.1f", (1 - groCPU / plainCPU) * 100)) % saved).\n\n"
        }
        return s
    }

    /// What the latency columns hold under each placement.
    static func latencyMeaning(_ pin: Pinning) -> String {
        switch pin {
        case .relay:
            return "Latency is from the sender's timestamp to the kernel's stamp of the datagram's arrival at the "
                + "generator's receiving socket (SO_TIMESTAMPNS, taken on loopback during the relay's send), not to "
                + "the receiving thread's read: the generator's own scheduling delay on its side is left out, and "
                + "the relay's CPU is its own, so the queueing in the figures is the relay's. The sender's own delay "
                + "between stamping a datagram and sending it stays in, the same for every engine at a load. The "
                + "receiving thread never sleeps (it polls at SCHED_IDLE beside the sender), so the relay's sends "
                + "wake no one, as a NIC's transmit does not."
        case .split:
            return "Latency is from the sender's timestamp to the receiving thread's read; the receiving thread shares the "
                + "relay's CPU, so a relay near its limit delays it and the figure holds both."
        case .off:
            return "Latency is from the sender's timestamp to the receiving thread's read, wherever the scheduler put the "
                + "threads: the generator's own scheduling delay is in it."
        }
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
