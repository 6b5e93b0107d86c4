import ClientSockets
import CLoadGen
import Foundation
import Glibc

/// Where a loopback benchmark's busy threads run: the sending side, the forwarder under test
/// and the receiving side (the sink). Left to the scheduler, three busy threads on two CPUs land
/// differently at every forwarder start and the forwarder's cost follows where it landed:
/// sharing a CPU with the sender it is preempted mid-burst and takes whole bursts, apart from
/// it it wakes at the first datagram and takes bursts in pieces (bench/README.md, "Fixed
/// placement"). Two placements, on the first and last allowed CPUs:
///
/// `split` (engine-bench `--pin split`, `compare --pin split`): the sender alone on the first,
/// the forwarder and the sink together on the last. Datagrams reach the forwarder from another
/// CPU, as a NIC's interrupts on other cores deliver them to a relay, and its sends wake the
/// sink on its own CPU, the nearest loopback comes to a NIC's transmit, which wakes no one. A
/// forwarder near its limit competes with the sink for its CPU, and the sink's delay shows in
/// the latency.
///
/// `alone` (`compare --pin relay`, make demo; engine-bench's `--pin alone` on two CPUs): the forwarder alone
/// on the last, the sender on the first and the sink beside it (on the second when there are
/// three or more). Nothing takes time from the forwarder, so its cost and its latency are its
/// own at every load; each send that finds the sink asleep wakes it across CPUs, which every
/// engine pays per wake-up of the sink.
public struct CPUPlacement: Sendable, Equatable {
    public let sourceMask: UInt64
    public let forwarderMask: UInt64
    public let sinkMask: UInt64

    /// Nil when the allowed CPUs are fewer than two, or more than 64, or not readable.
    public static func split() -> CPUPlacement? {
        allowedCPUs().map { CPUPlacement(sourceMask: $0.first, forwarderMask: $0.last, sinkMask: $0.last) }
    }

    /// Nil as for `split`.
    public static func alone() -> CPUPlacement? {
        allowedCPUs().map { cpus in
            let rest = cpus.allowed & ~cpus.first & ~cpus.last
            return CPUPlacement(sourceMask: cpus.first, forwarderMask: cpus.last, sinkMask: rest == 0 ? cpus.first : rest & (~rest &+ 1))
        }
    }

    /// The CPU numbers (lowest of each mask), for reports.
    public var sourceCPU: Int { sourceMask.trailingZeroBitCount }
    public var forwarderCPU: Int { forwarderMask.trailingZeroBitCount }
    public var sinkCPU: Int { sinkMask.trailingZeroBitCount }

    /// The allowed CPUs and the first and last of them; nil when fewer than two, more than 64 or
    /// not readable.
    private static func allowedCPUs() -> (allowed: UInt64, first: UInt64, last: UInt64)? {
        var allowed: UInt64 = 0
        guard lg_cpu_mask_get(&allowed) == 0, allowed.nonzeroBitCount >= 2 else { return nil }
        return (allowed, allowed & (~allowed &+ 1), UInt64(1) << (63 - allowed.leadingZeroBitCount))
    }

    /// Pins one thread (0: the calling one) to `mask`; threads it starts later inherit it.
    /// The error names sched_setaffinity's errno.
    public static func pin(thread: pid_t, to mask: UInt64) throws(LoadError) {
        if let error = set(thread, mask) { throw refusal(thread, mask, error) }
    }

    /// Pins every thread of a process, as a process of one thread is pinned whole (the relay:
    /// its workers, its HTTP and its main thread). A thread that ended after it was listed
    /// (ESRCH) needs no place.
    public static func pin(process: pid_t, to mask: UInt64) throws(LoadError) {
        for thread in threads(of: process) {
            if let error = set(thread, mask), error != ESRCH { throw refusal(thread, mask, error) }
        }
    }

    /// Nil when set, else errno.
    private static func set(_ thread: pid_t, _ mask: UInt64) -> Int32? { lg_cpu_mask_set(thread, mask) == 0 ? nil : errno }

    private static func refusal(_ thread: pid_t, _ mask: UInt64, _ error: Int32) -> LoadError {
        LoadError("sched_setaffinity(\(thread), 0x\(String(mask, radix: 16))): \(errnoText(error))")
    }

    /// The thread ids of a process, from /proc/PID/task.
    public static func threads(of pid: pid_t) -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []).compactMap { pid_t($0) }.sorted()
    }
}
