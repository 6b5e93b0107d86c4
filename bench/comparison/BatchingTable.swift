import LoadGen
import RelayObservation

/// Why each engine saves what it saves, from the relay's own counters (GET /v1/stats) summed
/// over the repeats of each engine and load: system calls per datagram, datagrams per receive
/// call and per turn (a wake-up of the worker), how turns spread by size, and what GSO carried.
public enum BatchingTable {
    public static let columns = ["load", "engine", "syscalls/datagram", "datagrams/receive call", "datagrams/turn",
                                 "turns of 1 datagram %", "of 2 %", "of 3-4 %", "of 5-8 %", "of 9-16 %", "of 17+ %",
                                 "GSO segments/send", "sent by GSO %"]

    /// The counters of every measured run of one engine at one load, summed.
    struct Totals {
        var packetsIn = 0.0, packetsOut = 0.0, syscalls = 0.0
        var batching = BatchCounters(receiveCalls: 0, receiveTurns: 0, turnSizes: Array(repeating: 0, count: 9), gsoSegments: 0, gsoSends: 0)

        mutating func add(_ delta: RelayDelta, _ counters: BatchCounters) {
            packetsIn += delta.packetsIn
            packetsOut += delta.packetsOut
            syscalls += delta.syscalls
            batching.receiveCalls += counters.receiveCalls
            batching.receiveTurns += counters.receiveTurns
            batching.turnSizes = zip(batching.turnSizes, counters.turnSizes).map { $0 + $1 }
            batching.gsoSegments += counters.gsoSegments
            batching.gsoSends += counters.gsoSends
        }
    }

    /// The summed counters of `engine` at `load`; nil when no run of it reported its batching.
    static func totals(_ records: [RunRecord], engine: String, load: LoadPoint) -> Totals? {
        var totals = Totals(), any = false
        for r in records where r.run.load == load && r.run.engine.name == engine {
            guard let delta = r.result?.relay, let counters = delta.batching else { continue }
            totals.add(delta, counters)
            any = true
        }
        return any && totals.packetsIn > 0 ? totals : nil
    }

    /// One row per relay engine and load whose runs reported their batching, in `cells`' order.
    public static func rows(records: [RunRecord], cells: [CellSummary]) -> [[String]] {
        cells.compactMap { cell in
            guard let totals = totals(records, engine: cell.engine, load: cell.load) else { return nil }
            let b = totals.batching
            // 1, 2, 3-4, 5-8, 9-16 and the rest, from the relay's buckets (upper bounds 1, 2, 4, ...).
            let shares = [b.turnSizes[0], b.turnSizes[1], b.turnSizes[2], b.turnSizes[3], b.turnSizes[4], b.turnSizes[5...].reduce(0, +)]
                .map { b.receiveTurns > 0 ? String(format: "%.0f", $0 / b.receiveTurns * 100) : "-" }
            return [cell.load.label, cell.engine, ratio(totals.syscalls, totals.packetsIn, "%.2f"),
                    ratio(totals.packetsIn, b.receiveCalls, "%.1f"), ratio(totals.packetsIn, b.receiveTurns, "%.1f")]
                + shares + [b.gsoSends > 0 ? ratio(b.gsoSegments, b.gsoSends, "%.1f") : "-", ratio(b.gsoSegments * 100, totals.packetsOut, "%.0f")]
        }
    }

    /// "; here, at LOAD, ...": mmsg's datagrams per call and per turn and both engines' system
    /// calls per datagram at the first load of 50k/s or more over many sessions, from this run.
    static func mmsgFigures(_ records: [RunRecord], cells: [CellSummary]) -> String {
        guard let load = cells.first(where: { $0.load.profile == .constant && $0.load.streams >= 20 && $0.load.offeredRate >= 50_000 })?.load,
              let mmsg = totals(records, engine: "mmsg", load: load), let perpacket = totals(records, engine: "perpacket", load: load)
        else { return "" }
        let b = mmsg.batching
        return "; here, at \(load.label), mmsg's receive calls carried \(ratio(mmsg.packetsIn, b.receiveCalls, "%.1f")) datagrams each "
            + "while its turns held \(ratio(mmsg.packetsIn, b.receiveTurns, "%.1f")), and it made \(ratio(mmsg.syscalls, mmsg.packetsIn, "%.2f")) "
            + "system calls per datagram against perpacket's \(ratio(perpacket.syscalls, perpacket.packetsIn, "%.2f"))"
    }

    static func ratio(_ a: Double, _ b: Double, _ format: String) -> String {
        b > 0 ? String(format: format, a / b) : "-"
    }

    /// The report's section, or nothing when no run reported its batching.
    public static func markdown(records: [RunRecord], cells: [CellSummary], fewFlows: [String]) -> String {
        let rows = rows(records: records, cells: cells)
        guard !rows.isEmpty else { return "" }
        var s = "## Why each engine saves what it saves: the relay's own counters\n\n"
        s += "From GET /v1/stats before and after each run, summed over its repeats: system calls per datagram received; "
        s += "datagrams per receive call (a recvmsg or recvmmsg on one socket; for uring, the reap of a turn's completions "
        s += "from every socket); datagrams per turn, the worker's loop from one wake-up to the next that received "
        s += "anything, across all its sockets, with the share of turns by size; datagrams per GSO send, and the share of "
        s += "datagrams sent as GSO segments.\n\n"
        s += ComparisonTable.markdown(columns: columns, rows: rows) + "\n\n"
        s += "Each session leg is a socket of its own. At moderate rates a turn finds a few datagrams spread over as "
        s += "many sockets, and recvmmsg and sendmmsg batch within one socket only, so each of mmsg's calls carries "
        s += "few of the turn's datagrams and it saves few of perpacket's system calls (perpacket also pays one empty "
        s += "recvmsg per socket it empties)" + mmsgFigures(records, cells: cells) + ". "
        s += "mmsg saves its calls where one socket has many datagrams waiting at each wake-up: few flows at a high rate"
        s += fewFlows.isEmpty ? "" : " (\(fewFlows.joined(separator: ", ")) above)"
        s += ". io_uring batches across sockets: one io_uring_enter reaps every socket's datagrams (multishot "
        s += "receives, no empty read) and submits every send of the turn, so its system calls per datagram follow "
        s += "datagrams per turn, not per socket. GSO then sends a leg's equal-size datagrams of one marking as one "
        s += "sendmsg with UDP_SEGMENT, so the kernel's per-send work (socket, route, headers) is paid once per send "
        s += "rather than once per datagram; segments per send says how far that goes at each load.\n\n"
        return s
    }
}
