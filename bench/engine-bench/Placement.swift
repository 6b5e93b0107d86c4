import CURing
import Foundation
import Glibc

/// Where each part of a measurement runs (`--pin`). Left to the scheduler, the source, the
/// forwarder and the sink (three busy threads on two CPUs) land differently from one forwarder
/// start to the next, and the forwarder's cost moves with where it landed: sharing a CPU with
/// the source, it is preempted mid-burst and takes whole bursts; apart from it, it wakes early
/// and takes bursts in pieces. Its cost per datagram then spreads by 10-20% between repeats,
/// more than the Swift/C gaps being measured, and uring against mmsg turns on which of the
/// two the scheduler happened to place next to the source (bench/README.md).
///
/// `--pin split` (the default, for CPU per datagram): the source alone on the first allowed
/// CPU, the forwarder and the sink together on the last, for every side alike. Datagrams reach
/// the forwarder from another CPU, as a NIC's interrupts on other cores deliver them to a
/// relay, and its sends wake the sink on its own CPU, the nearest loopback comes to a NIC's
/// transmit, which wakes no one. Only the forwarder's CPU is measured.
///
/// `--pin alone` (for throughput, bench/throughput.sh): the forwarder alone on the last CPU,
/// the source and the sink (the generator) together on the first. The highest rate a forwarder
/// sustains is the rate at which its CPU runs out, so nothing else may take time on that CPU;
/// under `split` the sink's share of it would be counted as the forwarder's limit. Each send
/// wakes the sink across CPUs (dearer per datagram, which is why CPU per datagram is measured
/// under `split`), and the generator's CPU, not the forwarder's, may run out first: the
/// per-run line says which (`limit`).
struct Placement {
    let sourceMask: UInt64
    let sinkMask: UInt64
    let forwarderMask: UInt64
    /// What runs on the source's CPU and on the forwarder's, for the per-run lines.
    let sourceCPUName: String
    let forwarderCPUName: String

    /// Nil when the allowed CPUs are fewer than two, or more than 64, or not readable.
    static func split() -> Placement? {
        allowedEnds().map { Placement(sourceMask: $0.first, sinkMask: $0.last, forwarderMask: $0.last,
                                      sourceCPUName: "source", forwarderCPUName: "forwarder+sink") }
    }

    /// Nil as for `split`.
    static func alone() -> Placement? {
        allowedEnds().map { Placement(sourceMask: $0.first, sinkMask: $0.first, forwarderMask: $0.last,
                                      sourceCPUName: "source+sink", forwarderCPUName: "forwarder") }
    }

    /// The first and the last CPU this process may run on, as one-bit masks.
    private static func allowedEnds() -> (first: UInt64, last: UInt64)? {
        var allowed: UInt64 = 0
        guard mr_cpu_mask_get(&allowed) == 0, allowed.nonzeroBitCount >= 2 else { return nil }
        return (allowed & (~allowed &+ 1), UInt64(1) << (63 - allowed.leadingZeroBitCount))
    }

    /// The CPU numbers the source and the forwarder run on (/proc/stat's "cpuN").
    var sourceCPU: Int { sourceMask.trailingZeroBitCount }
    var forwarderCPU: Int { forwarderMask.trailingZeroBitCount }

    /// Pins the calling thread: the source.
    func pinSource() { pin(0, sourceMask, "source") }
    /// Pins the calling thread: the sink.
    func pinSink() { pin(0, sinkMask, "sink") }
    /// Pins a single-threaded forwarder process.
    func pinForwarder(_ pid: pid_t) { pin(pid, forwarderMask, "forwarder") }
    /// Pins every thread of a forwarder process (the relay executable: its worker, its HTTP and
    /// its main thread), as a process of one thread is pinned whole; threads it starts later
    /// inherit the mask from their creator.
    func pinForwarderThreads(_ pid: pid_t) {
        for thread in threads(of: pid) { pin(thread, forwarderMask, "forwarder") }
    }

    private func pin(_ pid: pid_t, _ mask: UInt64, _ what: String) {
        if mr_cpu_mask_set(pid, mask) != 0 {
            fail("cannot pin the \(what) (sched_setaffinity: \(String(cString: strerror(errno)))); --pin off leaves placement to the scheduler")
        }
    }
}

/// The thread ids of a process, from /proc/PID/task.
func threads(of pid: pid_t) -> [pid_t] {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []).compactMap { pid_t($0) }.sorted()
}
