import ClientSockets
import CLoadGen
import Foundation
import Glibc

/// Where a loopback benchmark's busy threads run on two CPUs: the sending side alone on the
/// first allowed CPU, the forwarder under test and the receiving side together on the last
/// (`split`; engine-bench `--pin split`, `compare --pin split`). Left to the scheduler, three
/// busy threads on two CPUs land differently at every forwarder start and the forwarder's cost
/// follows where it landed: sharing a CPU with the sender it is preempted mid-burst and takes
/// whole bursts, apart from it it wakes at the first datagram and takes bursts in pieces
/// (bench/README.md measured 10-20% of spread between repeats from this alone). Pinned,
/// datagrams reach the forwarder from another CPU, as a NIC's interrupts on other cores
/// deliver them to a relay, and its sends wake the receiver on its own CPU, the nearest
/// loopback comes to a NIC's transmit, which wakes no one.
public struct CPUPlacement: Sendable, Equatable {
    public let sourceMask: UInt64
    public let forwarderMask: UInt64

    /// Nil when the allowed CPUs are fewer than two, or more than 64, or not readable.
    public static func split() -> CPUPlacement? {
        var allowed: UInt64 = 0
        guard lg_cpu_mask_get(&allowed) == 0, allowed.nonzeroBitCount >= 2 else { return nil }
        let first = allowed & (~allowed &+ 1)
        let last = UInt64(1) << (63 - allowed.leadingZeroBitCount)
        return CPUPlacement(sourceMask: first, forwarderMask: last)
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
