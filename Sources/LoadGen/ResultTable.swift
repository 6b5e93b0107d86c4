import Foundation
import NetAddress

/// The human-readable end-of-run table of `mediarelay-load` (without --json).
public enum ResultTable {
    public static func render(_ r: LoadResult) -> String {
        func f(_ d: Double?, _ digits: Int = 1) -> String {
            guard let d, d.isFinite else { return "-" }
            return String(format: "%.\(digits)f", d)
        }
        let marksTotal = r.tosSeen.reduce(0) { $0 + $1.count }
        var rows: [(String, String)] = [
            ("profile", "\(r.profile.rawValue), \(r.streams) streams\(r.bidirectional ? ", bidirectional" : ""), TOS \(r.tos)"),
            ("offered", "\(f(r.offeredRate, 0)) datagrams/s for \(f(r.seconds, 2)) s"),
            ("latched", "\(r.latchedStreams) of \(r.streams) streams"),
        ]
        if let rate = r.controlledRate {
            rows.append(("congestion control", "\(r.congestionControl.rawValue): mean sending rate \(f(rate, 0)) datagrams/s"))
        }
        if let server = r.turnServer {
            let redirected = r.turnRedirected > 0 ? " (\(r.turnRedirected) redirected to an alternate by 300)" : ""
            let data = r.turnSendIndications ? "Send indications" : "ChannelData on channel 0x4000"
            let peer = r.turnEchoPeer.map { r.turnPeers == .each ? " to an echo peer each, counted up from \($0)" : " to echo peer \($0)" } ?? ""
            rows.append(("TURN", "\(r.streams) allocations on \(server) over \(r.turnTransport.name.uppercased())\(redirected), "
                             + "\(data)\(peer); \(r.turnRefreshes) refresh rounds, \(r.turnFailedRefreshes) failed"))
            if r.turnFailedClients > 0 {
                rows.append(("TURN failed", "\(r.turnFailedClients) clients' connections failed; the first: \(r.turnFailure ?? "?")"))
            }
        }
        rows += [
            ("sent", "\(r.sent)"),
            ("received", "\(r.received) (\(f(r.deliveredFraction * 100, 2)) %)"),
            ("lost", "\(r.lost)"),
            ("reordered", "\(r.reordered)"),
            ("duplicated", "\(r.duplicated)"),
            ("latency us", "p50 \(f(r.latencyUs[0]))  p90 \(f(r.latencyUs[1]))  p99 \(f(r.latencyUs[2]))  p99.9 \(f(r.latencyUs[3]))  max \(f(r.latencyUs[4]))  (after \(f(r.warmupSeconds, 2)) s warm-up)"),
            ("jitter us", f(r.jitterUs)),
            ("ECN kept", "\(f(r.ecnKept * 100, 2)) %" + (r.receivedWithoutMarks > 0
                ? " (of those whose marks could be seen; \(r.receivedWithoutMarks) came on TCP/TLS, which carries none)" : "")),
            ("DSCP kept", "\(f(r.dscpKept * 100, 2)) %"),
            ("CE marked", "\(f(r.ceFraction * 100, 2)) % of received"),
            ("marks seen", r.tosSeen.prefix(4).map { seen in
                "DSCP \(seen.tos >> 2) ECN \(seen.tos & 3): \(f(Double(seen.count) / Double(max(1, marksTotal)) * 100, 2)) %"
            }.joined(separator: ", ") + (r.tosSeen.count > 4 ? ", ..." : "")),
            ("generator CPU", "\(f(r.generatorCPUSeconds, 3)) s (\(f(r.seconds > 0 ? r.generatorCPUSeconds / r.seconds * 100 : nil, 0)) % of one core)"),
        ]
        if let relay = r.relay {
            rows += [
                ("relay engine", relay.engine),
                ("relay CPU", "\(f(relay.cpuSeconds, 3)) s, \(f(relay.cpuNsPerPacket / 1000, 3)) us per datagram"),
                ("relay syscalls", "\(f(relay.syscallsPerPacket, 3)) per datagram"),
            ]
        }
        if let proc = r.relayProcCPUSeconds {
            rows.append(("relay CPU /proc", "\(f(proc, 3)) s, \(f((r.relayProcCPUNsPerDatagram ?? .nan) / 1000, 3)) us per datagram"))
        }
        if r.pacerSkipped > 0 { rows.append(("pacer behind", "\(r.pacerSkipped) ticks skipped: the generator fell behind")) }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(separator: "\n")
    }
}
