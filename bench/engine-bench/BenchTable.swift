import Foundation

/// The benchmark's Markdown table: per rate and backend, Swift's CPU per datagram, its C
/// counterpart's, and their ratio per repeat (median and min-max: the pairs ran side by side,
/// so the ratio of a pair is steadier than the ratio of two medians).
enum BenchTable {
    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func spread(_ values: [Double], _ format: String) -> String {
        String(format: "\(format) (\(format)-\(format))", median(values), values.min()!, values.max()!)
    }

    static func render(_ results: [String: [Measurement]], rates: [Int], names: [String], withReference: Bool) -> String {
        var table = "| offered rate | engine | Swift CPU us/datagram, median (min-max) | C CPU us/datagram | Swift/C, median (min-max) "
        table += "| syscalls/datagram Swift, C | sent as GSO segments Swift, C | delivered Swift, C | CPU saved vs perpacket | vs C perpacket |\n"
        table += "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for rate in rates {
            // Without perpacket in the run (--only), the saved columns say "-".
            let swiftBase = results["swift perpacket@\(rate)"].map { median($0.map(\.cpuMicrosecondsPerDatagram)) }
            let cBase = results["c perpacket@\(rate)"].map { median($0.map(\.cpuMicrosecondsPerDatagram)) }
            for name in names {
                let swift = results["swift \(name)@\(rate)"]!
                let c = withReference ? results["c \(name)@\(rate)"] : nil
                let cpu = swift.map(\.cpuMicrosecondsPerDatagram)
                let cCPU = c?.map(\.cpuMicrosecondsPerDatagram)
                let ratios = cCPU.map { zip(cpu, $0).map { $0 / $1 } }
                func pair(_ value: (Measurement) -> Double, _ format: String) -> String {
                    String(format: format, median(swift.map(value))) + (c.map { ", " + String(format: format, median($0.map(value))) } ?? "")
                }
                let saved = name == "perpacket" ? "-" : swiftBase.map { String(format: "%.0f%%", (1 - median(cpu) / $0) * 100) } ?? "-"
                let savedC = cBase.map { String(format: "%.0f%%", (1 - median(cpu) / $0) * 100) } ?? "-"
                table += "| \(rate)/s | \(name) | \(spread(cpu, "%.2f")) | \(cCPU.map { spread($0, "%.2f") } ?? "-") | "
                table += "\(ratios.map { spread($0, "%.2fx") } ?? "-") | \(pair(\.syscallsPerDatagram, "%.3f")) | "
                table += "\(pair({ $0.gsoShare * 100 }, "%.0f%%")) | \(pair({ $0.delivered * 100 }, "%.1f%%")) | \(saved) | \(savedC) |\n"
            }
        }
        return table + rivals(results, rates: rates, names: names, withReference: withReference)
            + timestampCosts(results, rates: rates, names: names)
    }

    /// What receive timestamps cost (`--timestamps both`): each configuration with them against
    /// without, per repeat (the two ran next to each other), as the extra CPU per datagram.
    static func timestampCosts(_ results: [String: [Measurement]], rates: [Int], names: [String]) -> String {
        let pairs = names.filter { names.contains($0 + Configuration.timestampSuffix) }
        guard !pairs.isEmpty else { return "" }
        var table = "\n| offered rate | engine | without timestamps, us/datagram | with | extra CPU per datagram, per repeat: median (min-max) |\n"
        table += "|---:|---|---:|---:|---:|\n"
        for rate in rates {
            for name in pairs {
                let plain = results["swift \(name)@\(rate)"]!.map(\.cpuMicrosecondsPerDatagram)
                let stamped = results["swift \(name)\(Configuration.timestampSuffix)@\(rate)"]!.map(\.cpuMicrosecondsPerDatagram)
                let extra = zip(stamped, plain).map { ($0 / $1 - 1) * 100 }
                table += "| \(rate)/s | \(name) | \(String(format: "%.2f", median(plain))) | \(String(format: "%.2f", median(stamped))) | "
                table += "\(spread(extra, "%+.1f%%")) |\n"
            }
        }
        return table
    }

    /// The relay executable beside the harness and C, per backend (issue 20): CPU per datagram
    /// delivered at the sink for all three (the one count the executable has of a window), the
    /// executable's whole process, its worker thread alone and the rest (main and HTTP threads,
    /// the median of the repeats' differences), and the ratios of the repeats' runs, median
    /// (min-max). Syscalls and GSO segments per datagram: the harness's over the
    /// window, the executable's over its whole run (its /v1/stats).
    static func executable(_ results: [String: [Measurement]], rates: [Int], names: [String], withReference: Bool) -> String {
        var table = "| offered rate | engine | executable us/datagram, median (min-max) | its worker thread | its other threads | harness | C "
        table += "| executable/C, median (min-max) | worker thread/C | executable/harness | worker thread/harness "
        table += "| syscalls/datagram executable, harness | sent as GSO segments executable, harness | delivered executable, harness, C |\n"
        table += "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for rate in rates {
            for name in names {
                let exe = results["exe \(name)@\(rate)"]!
                let harness = results["swift \(name)@\(rate)"]!
                let c = withReference ? results["c \(name)@\(rate)"] : nil
                let process = exe.map(\.cpuMicrosecondsPerDelivered)
                let worker = exe.map { $0.workerMicrosecondsPerDelivered ?? .nan }
                func ratios(_ values: [Double], _ over: [Measurement]?) -> String {
                    over.map { spread(zip(values, $0).map { $0 / $1.cpuMicrosecondsPerDelivered }, "%.2fx") } ?? "-"
                }
                func medians(_ value: (Measurement) -> Double, _ format: String, _ sides: [[Measurement]?]) -> String {
                    sides.map { $0.map { String(format: format, median($0.map(value))) } ?? "-" }.joined(separator: ", ")
                }
                let others = median(zip(process, worker).map { $0 - $1 })
                table += "| \(rate)/s | \(name) | \(spread(process, "%.2f")) | \(spread(worker, "%.2f")) | \(String(format: "%.3f", others)) "
                table += "| \(spread(harness.map(\.cpuMicrosecondsPerDelivered), "%.2f")) | \(c.map { spread($0.map(\.cpuMicrosecondsPerDelivered), "%.2f") } ?? "-") "
                table += "| \(ratios(process, c)) | \(ratios(worker, c)) | \(ratios(process, harness)) | \(ratios(worker, harness)) "
                table += "| \(medians(\.syscallsPerDatagram, "%.3f", [exe, harness])) | \(medians({ $0.gsoShare * 100 }, "%.0f%%", [exe, harness])) "
                table += "| \(medians({ $0.delivered * 100 }, "%.1f%%", [exe, harness, c])) |\n"
            }
        }
        return table
    }

    /// io_uring against recvmmsg/sendmmsg on the same load, per repeat (the two ran in the same
    /// repeat, minutes apart at most): the issue's "uring no dearer than mmsg on one flow".
    static func rivals(_ results: [String: [Measurement]], rates: [Int], names: [String], withReference: Bool) -> String {
        let pairs = [("uring", "mmsg"), ("uring+gso", "mmsg+gso")].filter { names.contains($0.0) && names.contains($0.1) }
        guard !pairs.isEmpty else { return "" }
        let sides = withReference ? ["swift", "c"] : ["swift"]
        var table = "\n| offered rate | ratio, per repeat |" + sides.map { " \($0 == "swift" ? "Swift" : "C"), median (min-max) |" }.joined() + "\n"
        table += "|---:|---|" + String(repeating: "---:|", count: sides.count) + "\n"
        for rate in rates {
            for (uring, mmsg) in pairs {
                table += "| \(rate)/s | \(uring)/\(mmsg) |"
                for side in sides {
                    let ratios = zip(results["\(side) \(uring)@\(rate)"]!, results["\(side) \(mmsg)@\(rate)"]!)
                        .map { $0.cpuMicrosecondsPerDatagram / $1.cpuMicrosecondsPerDatagram }
                    table += " \(spread(ratios, "%.2fx")) |"
                }
                table += "\n"
            }
        }
        return table
    }
}
