import LoadGen

/// The report's checks, one row each: the median over paired repeats, its interval, how many
/// repeats it rests on and the verdict (`Check`, `MedianInterval`).
public enum ChecksTable {
    public static let columns = ["check", "load", "against", "median", "90 % interval of the median (coverage)", "repeats", "aim", "verdict"]

    public static func rows(_ checks: [Check], records: [RunRecord]) -> [[String]] {
        checks.map { check in
            let name: String, aim: String, unit: String
            switch check.aim {
            case .savingAtLeast(let least):
                name = "\(check.engine): CPU saved"
                aim = String(format: "at least %.0f %%", least)
                unit = " %"
            case .addedLatencyAtMost(let most):
                name = "\(check.engine): p99 added"
                aim = String(format: "at most %.0f us", most)
                unit = " us"
            }
            guard let interval = MedianInterval(check.samples(records)) else {
                return [name, check.load.label, check.baseline, "-", "-", "0", aim, "not measured"]
            }
            let coverage = String(format: "%.0f %%", interval.coverage * 100)
            return [name, check.load.label, check.baseline, String(format: "%+.1f", interval.median) + unit,
                    String(format: "%+.1f to %+.1f", interval.low, interval.high) + unit + " (\(coverage))",
                    String(interval.count), aim, check.verdict(interval).rawValue]
        }
    }

    /// `budget`: the seconds past which no round started (`--budget`), said beside the rule.
    public static func markdown(_ checks: [Check], records: [RunRecord], rule: StoppingRule, budget: Double? = nil) -> String {
        let budgetNote = budget.map { String(format: ", none past the minimum that would end after %.0f s", $0) } ?? ""
        guard !checks.isEmpty else { return "" }
        var s = "## Checks\n\n"
        s += "Batching must not cost latency (each engine's p99 at \(Check.latencyLoad.label) within "
        s += "\(Int(Check.latencyAim)) us of perpacket's), and from 50k datagrams/s batched engines save at least 25 % of "
        s += "CPU per datagram, GSO at least 40 %. Each figure is paired within a repeat round (the engine against "
        s += "its baseline in the same round), and the verdict rests on the interval that holds the median of those "
        s += "figures with 90 % confidence whatever their distribution (order statistics; with fewer than five "
        s += "repeats it is the whole range, with the coverage shown): met or not met when the interval lies wholly on "
        s += "one side of the aim, inconclusive when it still holds the aim. After \(rule.minimum) rounds of every engine "
        s += "at every load, a check was repeated (its two sides, interleaved) until its interval held 90 % and was clear "
        s += "of the aim or narrower than its bound (\(Int(Check.savingBound)) points of CPU saved, "
        s += "\(Int(Check.latencyBound)) us of p99), or, with fewer repeats, until their range cleared the aim by half "
        s += "the bound; at most \(rule.maximum) rounds\(budgetNote).\n\n"
        s += ComparisonTable.markdown(columns: columns, rows: rows(checks, records: records)) + "\n\n"
        return s
    }
}
