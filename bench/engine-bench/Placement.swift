import BenchSupport
import ClientSockets
import Foundation
import Glibc

/// Where each part of a measurement runs (`--pin`), on the first and last allowed CPUs that
/// LoadGen's `CPUPlacement.split()` finds (why pinning at all: there and in bench/README.md).
///
/// `--pin split` (the default, for CPU per datagram): the source alone on the first CPU, the
/// forwarder and the sink together on the last, for every side alike. Only the forwarder's CPU
/// is measured.
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
        CPUPlacement.split().map { Placement(sourceMask: $0.sourceMask, sinkMask: $0.forwarderMask, forwarderMask: $0.forwarderMask,
                                             sourceCPUName: "source", forwarderCPUName: "forwarder+sink") }
    }

    /// Nil as for `split`.
    static func alone() -> Placement? {
        CPUPlacement.split().map { Placement(sourceMask: $0.sourceMask, sinkMask: $0.sourceMask, forwarderMask: $0.forwarderMask,
                                             sourceCPUName: "source+sink", forwarderCPUName: "forwarder") }
    }

    /// The CPU numbers the source and the forwarder run on (/proc/stat's "cpuN").
    var sourceCPU: Int { sourceMask.trailingZeroBitCount }
    var forwarderCPU: Int { forwarderMask.trailingZeroBitCount }

    /// Pins the calling thread: the source.
    func pinSource() { pin("source") { () throws(LoadError) in try CPUPlacement.pin(thread: 0, to: sourceMask) } }
    /// Pins the calling thread: the sink.
    func pinSink() { pin("sink") { () throws(LoadError) in try CPUPlacement.pin(thread: 0, to: sinkMask) } }
    /// Pins a single-threaded forwarder process.
    func pinForwarder(_ pid: pid_t) { pin("forwarder") { () throws(LoadError) in try CPUPlacement.pin(thread: pid, to: forwarderMask) } }
    /// Pins every thread of a forwarder process (the relay executable: its worker, its HTTP and
    /// its main thread); threads it starts later inherit the mask from their creator.
    func pinForwarderThreads(_ pid: pid_t) {
        pin("forwarder") { () throws(LoadError) in try CPUPlacement.pin(process: pid, to: forwarderMask) }
    }

    private func pin(_ what: String, _ body: () throws(LoadError) -> Void) {
        do { try body() } catch {
            fail("cannot pin the \(what) (\(error.message)); --pin off leaves placement to the scheduler")
        }
    }
}
