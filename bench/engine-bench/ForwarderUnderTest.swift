import Foundation
import Glibc
import NetAddress

/// A forwarder's own counters, cumulative: datagrams forwarded, syscalls made (one
/// io_uring_enter counts one), datagrams sent as GSO segments.
struct ForwarderCounters {
    var forwarded: UInt64
    var syscalls: UInt64
    var gso: UInt64
}

/// What a forwarder has done so far, read from outside at one moment.
struct ForwarderReading {
    /// The whole process's CPU (user + system, every thread), from its kernel CPU clock.
    var cpuSeconds: Double
    /// The forwarding thread's alone, where the process has other threads (the relay
    /// executable's main and HTTP threads); nil for a forwarder of one thread.
    var workerCPUSeconds: Double?
    /// Its own counters where they can be read at once, without disturbing the load (harness
    /// and C: a mapped file); nil for the relay executable, whose /v1/stats is a snapshot up to
    /// 100 ms old and costs an HTTP request.
    var counters: ForwarderCounters?
}

/// One forwarder under test, started as a child process: ours (`engine-bench serve`), the C
/// reference, or the relay executable with a forward rule. The measurement treats all alike:
/// pinned the same way, read at the same moments, stopped once the window is over.
protocol ForwarderUnderTest: AnyObject {
    /// Where the source sends.
    var target: Endpoint { get }
    /// Every thread of the forwarder on the forwarder's CPU.
    func pin(_ placement: Placement)
    func read() throws -> ForwarderReading
    /// Counters over the whole run so far, for ratios (syscalls and GSO segments per datagram)
    /// where `read` has none; read once the window is over, when a request disturbs nothing.
    func lifetimeCounters() throws -> ForwarderCounters
    func stop()
}

func seconds(of clock: clockid_t) -> Double {
    var now = timespec()
    clock_gettime(clock, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// The kernel CPU clock of another process: every thread's CPU, exited ones included.
func processCPUClock(_ pid: pid_t) throws -> clockid_t {
    var clock = clockid_t()
    let failed = clock_getcpuclockid(pid, &clock)  // returns the error number itself
    guard failed == 0 else { throw BenchError("clock_getcpuclockid(\(pid)): \(String(cString: strerror(failed)))") }
    return clock
}

/// A forwarder's command line under `wrap` (a profiler that runs it: valgrind, strace), which
/// is found on the PATH when not given as a path.
func wrapped(_ command: [String], in wrap: [String]) -> [String] {
    guard let tool = wrap.first else { return command }
    return (tool.hasPrefix("/") ? [] : ["/usr/bin/env"]) + wrap + command
}

/// Ends a forwarder with SIGTERM and waits for it; SIGKILL after 30 s (a forwarder stalled
/// under valgrind never takes the signal). Under a wrapper that runs the forwarder as its child
/// (strace, perf) the forwarder is told, not the wrapper, which would leave it running; the
/// wrapper then ends with it.
func terminate(_ process: Process) {
    guard process.isRunning else { return }
    let pid = process.processIdentifier
    let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
    let forwarders = children.split(separator: " ").compactMap { pid_t($0) }
    let targets = forwarders.isEmpty ? [pid] : forwarders
    for target in targets { kill(target, SIGTERM) }
    for _ in 0..<3000 where process.isRunning { usleep(10_000) }
    if process.isRunning {
        FileHandle.standardError.write(Data("engine-bench: the forwarder did not end within 30 s of SIGTERM: killed\n".utf8))
        for target in targets { kill(target, SIGKILL) }
    }
    process.waitUntilExit()
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
