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

    /// One row per relay engine and load whose runs reported their batching, in `cells`' order.
    public static func rows(records: [RunRecord], cells: [CellSummary]) -> [[String]] {
        cells.compactMap { cell in
            var totals = Totals(), any = false
            for r in records where r.run.load == cell.load && r.run.engine.name == cell.engine {
                guard let delta = r.result?.relay, let counters = delta.batching else { continue }
                totals.add(delta, counters)
                any = true
            }
            guard any, totals.packetsIn > 0 else { return nil }
            let b = totals.batching
            // 1, 2, 3-4, 5-8, 9-16 and the rest, from the relay's buckets (upper bounds 1, 2, 4, ...).
            let shares = [b.turnSizes[0], b.turnSizes[1], b.turnSizes[2], b.turnSizes[3], b.turnSizes[4], b.turnSizes[5...].reduce(0, +)]
                .map { b.receiveTurns > 0 ? String(format: "%.0f", $0 / b.receiveTurns * 100) : "-" }
            return [cell.load.label, cell.engine, ratio(totals.syscalls, totals.packetsIn, "%.2f"),
                    ratio(totals.packetsIn, b.receiveCalls, "%.1f"), ratio(totals.packetsIn, b.receiveTurns, "%.1f")]
                + shares + [b.gsoSends > 0 ? ratio(b.gsoSegments, b.gsoSends, "%.1f") : "-", ratio(b.gsoSegments * 100, totals.packetsOut, "%.0f")]
        }
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
        s += "Each session leg is a socket of its own. At these rates a turn finds a few datagrams spread over as "
        s += "many sockets, and recvmmsg and sendmmsg batch within one socket only, so each of mmsg's calls still "
        s += "carries one or two datagrams (datagrams per receive call against datagrams per turn) and it makes nearly "
        s += "as many system calls as perpacket, which also pays one empty recvmsg per socket it empties. "
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
