/// One CSV row per run of the comparison (RFC 4180 quoting), for anyone who wants to redo
/// the statistics.
public enum ComparisonCSV {
    public static let columns = [
        "repeat", "engine", "relay_engine", "load", "profile", "streams", "offered_rate", "seconds",
        "sent", "received", "delivered_pct", "lost", "reordered", "duplicated",
        "relay_cpu_us_per_datagram", "relay_syscalls_per_datagram", "p50_us", "p99_us", "p999_us", "max_us",
        "jitter_us", "ecn_kept", "dscp_kept", "generator_cpu_seconds",
        "relay_stats_cpu_seconds", "relay_proc_cpu_seconds", "relay_packets_in", "error",
    ]

    public static func render(_ records: [RunRecord]) -> String {
        var lines = [columns.joined(separator: ",")]
        for r in records {
            let x = r.result
            func n(_ v: Double?) -> String {
                guard let v, v.isFinite else { return "" }
                return v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
            }
            func u(_ v: UInt64?) -> String { v.map(String.init) ?? "" }
            let fields: [String] = [
                String(r.run.repeatIndex + 1), r.run.engine.name, x?.relay?.engine ?? "", r.run.load.label,
                r.run.load.profile.rawValue, String(r.run.load.streams), n(r.run.load.offeredRate), n(x?.seconds),
                u(x?.sent), u(x?.received), n(r.deliveredPercent), u(x?.lost), u(x?.reordered), u(x?.duplicated),
                n(r.relayCPUUsPerDatagram), n(r.syscallsPerDatagram), n(x?.latencyUs[0]), n(x?.latencyUs[2]),
                n(x?.latencyUs[3]), n(x?.latencyUs[4]), n(x?.jitterUs), n(x?.ecnKept), n(x?.dscpKept),
                n(x?.generatorCPUSeconds), n(x?.relay?.cpuSeconds), n(x?.relayProcCPUSeconds), n(x?.relay?.packetsIn),
                r.error ?? "",
            ]
            lines.append(fields.map(quote).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func quote(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return field }
        var out = "\""
        for c in field { out += c == "\"" ? "\"\"" : String(c) }
        return out + "\""
    }
}
