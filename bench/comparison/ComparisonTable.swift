import Foundation
import LoadGen

/// The comparison's summary table, as aligned text (for the terminal) or Markdown.
public enum ComparisonTable {
    public static let columns = ["engine", "load", "offered/s", "sent/s", "delivered %", "relay CPU us/datagram (median, min-max)",
                                 "syscalls/datagram", "p50 us", "p99 us", "p99.9 us", "CPU saved vs perpacket", "vs C perpacket", "runs"]

    /// 1 - median(engine) / median(baseline) at the same load, as a signed percentage.
    static func saved(_ c: CellSummary, against baseline: String, in cells: [CellSummary]) -> String {
        let base = cells.first { $0.load == c.load && $0.engine == baseline }
        guard c.engine != baseline, let mine = c.cpuUs?.median, let theirs = base?.cpuUs?.median, theirs > 0 else { return "-" }
        return String(format: "%+.0f %%", (1 - mine / theirs) * 100)
    }

    public static func rows(_ cells: [CellSummary]) -> [[String]] {
        cells.map { c in
            // The relay reports its backend without "+gso" and the worker count ("uring+gso w2" ran "uring").
            let backend = String(c.engine.prefix { $0 != " " }).replacingOccurrences(of: "+gso", with: "").replacingOccurrences(of: "+gro", with: "")
            let engine = c.reportedEngines.isEmpty || c.reportedEngines == [backend]
                ? c.engine : "\(c.engine) (ran \(c.reportedEngines.joined(separator: ",")))"
            return [engine, c.load.label, String(format: "%.0f", c.load.offeredRate), format(c.sentRate?.median, "%.0f"),
                    format(c.delivered?.median, "%.2f"),
                    spread(c.cpuUs, "%.3f"),
                    format(c.syscalls?.median, "%.3f"), format(c.p50?.median, "%.0f"), format(c.p99?.median, "%.0f"),
                    format(c.p999?.median, "%.0f"), saved(c, against: "perpacket", in: cells),
                    saved(c, against: EngineSetting.cPerPacket.name, in: cells), String(c.runs)]
        }
    }

    static func format(_ v: Double?, _ f: String) -> String {
        guard let v, v.isFinite else { return "-" }
        return String(format: f, v)
    }

    /// `median (min-max)`, each in format `f`, the median followed by `unit`.
    static func spread(_ s: Summary?, _ f: String, unit: String = "") -> String {
        guard let s else { return "-" }
        return String(format: "\(f)\(unit) (\(f)-\(f))", s.median, s.min, s.max)
    }

    /// Columns padded to their widest cell.
    public static func text(_ cells: [CellSummary]) -> String { text(columns: columns, rows: rows(cells)) }

    public static func text(columns: [String], rows: [[String]]) -> String {
        let all = [columns] + rows
        let widths = columns.indices.map { i in all.map { $0[i].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: CharacterSet(charactersIn: " "))
        }.joined(separator: "\n")
    }

    public static func markdown(_ cells: [CellSummary]) -> String { markdown(columns: columns, rows: rows(cells)) }

    public static func markdown(columns: [String], rows: [[String]]) -> String {
        var lines = ["| " + columns.joined(separator: " | ") + " |", "|" + columns.map { _ in "---" }.joined(separator: "|") + "|"]
        for row in rows { lines.append("| " + row.joined(separator: " | ") + " |") }
        return lines.joined(separator: "\n")
    }
}
