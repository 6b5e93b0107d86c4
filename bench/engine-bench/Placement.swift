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
/// `--pin split`: the source alone on the first allowed CPU, the forwarder and the sink together
/// on the last, for the Swift and the C forwarder alike. Datagrams reach the forwarder from
/// another CPU, as a NIC's interrupts on other cores deliver them to a relay, and its sends
/// wake the sink on its own CPU, the nearest loopback comes to a NIC's transmit, which wakes
/// no one. Only the forwarder's CPU is measured.
struct Placement {
    let sourceMask: UInt64
    let forwarderMask: UInt64

    /// Nil when the allowed CPUs are fewer than two, or more than 64, or not readable.
    static func split() -> Placement? {
        var allowed: UInt64 = 0
        guard mr_cpu_mask_get(&allowed) == 0, allowed.nonzeroBitCount >= 2 else { return nil }
        let first = allowed & (~allowed &+ 1)
        let last = UInt64(1) << (63 - allowed.leadingZeroBitCount)
        return Placement(sourceMask: first, forwarderMask: last)
    }

    /// Pins the calling thread: the source.
    func pinSource() { pin(0, sourceMask, "source") }
    /// Pins the calling thread: the sink, beside the forwarder.
    func pinSink() { pin(0, forwarderMask, "sink") }
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
