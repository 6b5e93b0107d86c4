import Foundation
import Glibc
import SystemSupport

/// Counters the kernel keeps for everyone, read from /proc, so that every side (harness, C
/// reference, relay executable) is judged by the same figures without its cooperation.
enum KernelCounters {
    /// For each port, the datagrams dropped at the UDP sockets bound to 127.0.0.1:port because
    /// their receive queue was full: the "drops" column of /proc/net/udp (read once for all).
    /// The kernel counts a drop per buffer, so a GRO buffer dropped whole counts once however
    /// many datagrams it held: this says where datagrams were lost, not how many.
    static func udpDrops(ports: [UInt16]) -> [UInt64] {
        let text = contents("/proc/net/udp")
        // The address as the kernel prints it, a 32-bit word in the host's order (little-endian here).
        let locals = ports.map { String(format: "0100007F:%04X", $0) }
        var drops = [UInt64](repeating: 0, count: ports.count)
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 12, let index = locals.firstIndex(where: { fields[1] == $0 }),
                  let count = UInt64(fields[fields.count - 1]) else { continue }
            drops[index] += count
        }
        return drops
    }

    /// The seconds one CPU has been idle (idle and iowait), from its "cpuN" line in /proc/stat;
    /// nil when it cannot be read. On a tickless kernel these two are kept from the moments the
    /// CPU went idle and woke, exact to the 1/100 s printed; the busy columns beside them are
    /// sampled at the timer tick, which a forwarder woken by a source paced on millisecond
    /// deadlines can match in phase, seen always busy or never. So busy = window - idle.
    static func idleSeconds(_ cpu: Int) -> Double? {
        let name = "cpu\(cpu)"
        guard let line = contents("/proc/stat").split(separator: "\n").first(where: { $0.split(separator: " ").first.map(String.init) == name }) else {
            return nil
        }
        // user nice system idle iowait ...
        let ticks = line.split(separator: " ").dropFirst().prefix(5).compactMap { UInt64($0) }
        guard ticks.count == 5 else { return nil }
        return Double(ticks[3] + ticks[4]) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A /proc file whole. Foundation's readers take one page of a file whose size the kernel
    /// gives as 0, and /proc/net/udp holds a line per socket on the machine: read to the end.
    private static func contents(_ path: String) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { SystemCall.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while case .done(let count) = SystemCall.outcome({ chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }),
              count > 0 {
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
