import LoadGen
/// The relay against the C reference forwarder of its own backend (`compare --references all`;
/// issue 20's aim: within 1.05x), per load and backend: each side's CPU per datagram over the
/// repeats, and relay/C as the median and min-max of the per-repeat ratios. The two sides of a
/// ratio ran in the same repeat round (compare interleaves them), so drift from one round to
/// the next falls on both and cancels, which the ratio of two medians does not.
public enum CounterpartTable {
    /// Issue 20's aim for relay/C.
    public static let aim = 1.05

    public static let columns = ["load", "backend", "relay us/datagram (median, min-max)", "C us/datagram (median, min-max)",
                                 "relay/C per repeat, median (min-max)", "repeats paired", "delivered % relay, C", "within 1.05x"]

    /// A relay engine and its C counterpart at one load.
    public struct Pair: Sendable {
        public let relay: CellSummary
        public let reference: CellSummary
        /// relay/C of each repeat in which both ran and were measured.
        public let ratios: [Double]

        public var ratio: Summary? { Summary(ratios) }
    }

    /// Every relay cell that has its C counterpart at the same load, in the order of `cells`.
    public static func pairs(records: [RunRecord], cells: [CellSummary]) -> [Pair] {
        var counterparts: [String: String] = [:]
        for r in records where r.run.engine.reference {
            if let relay = r.run.engine.counterpart { counterparts[relay] = r.run.engine.name }
        }
        var cpu: [String: Double] = [:]
        func key(_ load: LoadPoint, _ engine: String, _ round: Int) -> String { "\(load.label) \(engine) \(round)" }
        for r in records { if let us = r.relayCPUUsPerDatagram { cpu[key(r.run.load, r.run.engine.name, r.run.repeatIndex)] = us } }
        let rounds = Set(records.map(\.run.repeatIndex)).sorted()
        return cells.compactMap { relay in
            guard let name = counterparts[relay.engine],
                  let reference = cells.first(where: { $0.load == relay.load && $0.engine == name }) else { return nil }
            let ratios = rounds.compactMap { round -> Double? in
                guard let mine = cpu[key(relay.load, relay.engine, round)], let theirs = cpu[key(relay.load, name, round)], theirs > 0 else { return nil }
                return mine / theirs
            }
            return Pair(relay: relay, reference: reference, ratios: ratios)
        }
    }

    public static func rows(_ pairs: [Pair]) -> [[String]] {
        pairs.map { p in
            let delivered = [p.relay.delivered, p.reference.delivered].map { ComparisonTable.format($0?.median, "%.2f") }
            return [p.relay.load.label, p.relay.engine, ComparisonTable.spread(p.relay.cpuUs, "%.3f"),
                    ComparisonTable.spread(p.reference.cpuUs, "%.3f"), ComparisonTable.spread(p.ratio, "%.3f", unit: "x"),
                    String(p.ratios.count), delivered.joined(separator: ", "),
                    p.ratio.map { $0.median <= aim ? "yes" : "no" } ?? "-"]
        }
    }

    /// The report's section, or nothing when no relay engine ran beside its C counterpart.
    public static func markdown(_ pairs: [Pair]) -> String {
        guard !pairs.isEmpty else { return "" }
        var s = "## The relay against the C reference of its backend\n\n"
        s += "Per load and backend: the relay's CPU per datagram and that of c-NAME, the C reference forwarder with the "
        s += "same backend, GSO and GRO over the same session flows, each the median (min-max) over repeats; relay/C is "
        s += "the median (min-max) of the per-repeat ratios, the two sides of each ratio having run in the same repeat "
        s += "round. Issue 20's aim: relay/C within \(String(format: "%.2f", aim))x. Below 100 % delivered, a side was "
        s += "saturated (generator and forwarder share the cores) and its figure is the cost of a datagram at full load.\n\n"
        return s + ComparisonTable.markdown(columns: columns, rows: rows(pairs)) + "\n\n"
    }
}
