import Foundation
import Glibc
import LoadGen

/// Where each part of a measurement runs (`--pin`): `--pin split` is LoadGen's
/// `CPUPlacement.split()` (why that split, there and in bench/README.md): the source alone on
/// the first allowed CPU, the forwarder and the sink together on the last, for the Swift and
/// the C forwarder alike. Only the forwarder's CPU is measured.
struct Placement {
    let cpus: CPUPlacement

    /// Nil when the allowed CPUs are fewer than two, or more than 64, or not readable.
    static func split() -> Placement? { CPUPlacement.split().map(Placement.init) }

    /// Pins the calling thread: the source.
    func pinSource() { pin("source") { () throws(LoadError) in try CPUPlacement.pin(thread: 0, to: cpus.sourceMask) } }
    /// Pins the calling thread: the sink, beside the forwarder.
    func pinSink() { pin("sink") { () throws(LoadError) in try CPUPlacement.pin(thread: 0, to: cpus.forwarderMask) } }
    /// Pins a single-threaded forwarder process.
    func pinForwarder(_ pid: pid_t) { pin("forwarder") { () throws(LoadError) in try CPUPlacement.pin(thread: pid, to: cpus.forwarderMask) } }
    /// Pins every thread of a forwarder process (the relay executable: its worker, its HTTP and
    /// its main thread); threads it starts later inherit the mask from their creator.
    func pinForwarderThreads(_ pid: pid_t) {
        pin("forwarder") { () throws(LoadError) in try CPUPlacement.pin(process: pid, to: cpus.forwarderMask) }
    }

    private func pin(_ what: String, _ body: () throws(LoadError) -> Void) {
        do { try body() } catch {
            fail("cannot pin the \(what) (\(error.message)); --pin off leaves placement to the scheduler")
        }
    }
}
