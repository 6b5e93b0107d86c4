import FastPath
import NetAddress
import RelayHTTP
import StatsKeys

/// The fast path's part of /v1/stats and /metrics: its status from start and the kernel's
/// counters read now (one map lookup per request, on the HTTP thread).
struct FastPathReport {
    let status: FastPathStatus
    let entries: Int
    let capacity: Int
    let refusals: Int
    /// Every datagram the kernel carried since load; zero while off.
    let totals: FlowCounters

    init(_ status: FastPathStatus) {
        self.status = status
        if let kernel = status.kernel {
            entries = kernel.count
            capacity = kernel.capacity
            refusals = KernelFastPathSeam.refusals(kernel)
            totals = KernelFastPathSeam.totals(kernel)
        } else {
            entries = 0
            capacity = 0
            refusals = 0
            totals = FlowCounters()
        }
    }

    /// "checksumState" -> "checksum_state": the reasons' names in stats and metric labels.
    static func name(_ reason: FlowCounters.HandBack) -> String {
        String(describing: reason).reduce(into: "") { name, character in
            if character.isUppercase { name += "_" + character.lowercased() } else { name.append(character) }
        }
    }

    var json: [String: Any] {
        var handedBack: [String: Any] = [:]
        for reason in FlowCounters.HandBack.allCases { handedBack[Self.name(reason)] = totals.handedBack[reason] ?? 0 }
        var object: [String: Any] = [
            StatsKey.FastPath.requested: status.requested.rawValue,
            StatsKey.FastPath.on: status.kernel != nil,
            StatsKey.FastPath.interfaces: status.interfaces.map { interface -> [String: Any] in
                var entry: [String: Any] = [StatsKey.FastPath.name: interface.name,
                                            StatsKey.FastPath.mode: interface.mode?.rawValue ?? "off"]
                if let reason = interface.reason { entry[StatsKey.FastPath.reason] = reason }
                return entry
            },
            StatsKey.FastPath.entries: entries, StatsKey.FastPath.capacity: capacity, StatsKey.FastPath.refusals: refusals,
            StatsKey.FastPath.datagrams: totals.packets, StatsKey.FastPath.bytes: totals.bytes,
            StatsKey.FastPath.ecnIn: Self.byCodepoint(totals.ecnIn), StatsKey.FastPath.ecnOut: Self.byCodepoint(totals.ecnOut),
            StatsKey.FastPath.handedBack: handedBack, StatsKey.FastPath.failed: totals.failed,
        ]
        if let reason = status.reason { object[StatsKey.FastPath.reason] = reason }
        return object
    }

    private static func byCodepoint(_ counts: [UInt64]) -> [String: Any] {
        var result: [String: Any] = [:]
        for codepoint in ECN.allCases { result[codepoint.name] = counts[Int(codepoint.rawValue)] }
        return result
    }

    /// The kernel's series. Datagrams and bytes sent go into the families the workers' counts
    /// are in, with `path="kernel"` beside their `path="user"`, so a sum over a family is
    /// everything the relay sent. The ECN families keep their labels as they were (scripts
    /// match them by text), so the kernel's codepoints have their own.
    func prometheus(into text: inout PrometheusText) {
        let kernel: PrometheusText.Labels = [("path", "kernel")]
        text.counter("mediarelay_packets_out_total", help: StatsReport.packetsOutHelp, labels: kernel, value: totals.packets)
        text.counter("mediarelay_bytes_out_total", help: StatsReport.bytesOutHelp, labels: kernel, value: totals.bytes)
        for codepoint in ECN.allCases {
            let labels: PrometheusText.Labels = [("codepoint", codepoint.name)]
            text.counter("mediarelay_fast_path_ecn_in_total", help: "Datagrams the kernel fast path forwarded, by ECN codepoint as they arrived.",
                         labels: labels, value: totals.ecnIn[Int(codepoint.rawValue)])
            text.counter("mediarelay_fast_path_ecn_out_total", help: "Datagrams the kernel fast path forwarded, by ECN codepoint as they left.",
                         labels: labels, value: totals.ecnOut[Int(codepoint.rawValue)])
        }
        for mode in [FastPathAttachment.tc, .xdp] {
            text.gauge("mediarelay_fast_path_interfaces", help: "Interfaces the kernel fast path is attached to, by mode.",
                       labels: [("mode", mode.rawValue)], value: status.interfaces.count { $0.mode == mode })
        }
        text.gauge("mediarelay_fast_path_entries", help: "Flows the kernel fast path forwards now.", value: entries)
        text.gauge("mediarelay_fast_path_capacity", help: "Flows the kernel fast path can hold.", value: capacity)
        text.counter("mediarelay_fast_path_refusals_total", help: "Flows the kernel fast path refused (table full, unsupported).",
                     value: refusals)
        for reason in FlowCounters.HandBack.allCases {
            text.counter("mediarelay_fast_path_handed_back_total",
                         help: "Datagrams of offloaded flows the kernel left to user space, by reason.",
                         labels: [("reason", Self.name(reason))], value: totals.handedBack[reason] ?? 0)
        }
        text.counter("mediarelay_fast_path_failed_total", help: "Datagrams the kernel dropped when a rewrite failed half-way.",
                     value: totals.failed)
    }
}
