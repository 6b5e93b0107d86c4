import BenchSupport
import DatagramEngine
import Foundation
import Glibc
import NetAddress
import RelayObservation

/// The relay executable as the forwarder under test (`--executable`): `mediarelay` with one
/// worker and one forward rule from a loopback port to the sink, its engine set up from the
/// harness's own configuration (`relayEngineArguments`), so the two differ by what the
/// executable adds around the engine: the forward rule's client table, counters and clocks,
/// the worker's turn (housekeeping, publishing), its HTTP and main threads.
///
/// Unlike the harness it has three threads, so it is read twice: the whole process's CPU clock
/// (every thread, as an operator pays) and its worker thread's alone (schedstat of the thread
/// named `mr-worker-0`); the difference is the rest of the process. Its counters are the
/// workers' /v1/stats snapshot, published every 100 ms: too stale to count a one-second window,
/// so the window's datagrams are counted at the sink, and syscalls and GSO segments per
/// datagram are the snapshot's ratios over the whole run.
final class RelayForwarder: ForwarderUnderTest {
    let server: ServerProcess
    let target: Endpoint
    private let clock: clockid_t
    private let httpPort: UInt16
    private let wrapped: Bool
    /// The worker thread's id; nil under a wrapper (strace, perf), which runs the relay as its
    /// child and is read by no one's CPU clock.
    private let worker: pid_t?

    /// `command`: the relay, after an optional wrapper (`wrapped`: valgrind, strace), as in
    /// `engine-bench --count`. `listenAddress`: where the rule listens (`--listen-address`);
    /// the source sends to 127.0.0.1 either way, so 0.0.0.0 measures a wildcard listener, which
    /// reads the local address of every datagram (IP_PKTINFO).
    init(command: [String], wrapped: Bool, configuration: Configuration, destination: Endpoint, listen listenAddress: String) throws {
        // A port nobody holds now, for the rule's listener; the relay binds it a moment later.
        let listen = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint.port
        // The forward client's upstream socket comes from --ports: below the ephemeral range,
        // where a busy machine's other tests take theirs, and a different block each run.
        let low = Int.random(in: 20_000...32_000)
        let arguments = relayEngineArguments(configuration) + [
            "--workers", "1", "--forward", "\(listenAddress):\(listen)=\(destination)", "--http", "127.0.0.1:0",
            "--ports", "\(low)-\(low + 63)", "--relay-address", "127.0.0.1", "--drain-seconds", "0", "--log-level", "info",
        ]
        // Ready once "http listening on 127.0.0.1:PORT" is logged and /healthz answers: the
        // workers and their listeners are up before the HTTP server starts. Under valgrind
        // that takes seconds.
        do {
            server = try ServerProcess(path: command.last!, arguments: arguments, prefix: Array(command.dropLast()),
                                       startTimeoutMs: 120_000)
        } catch {
            throw BenchError("\(command.joined(separator: " ")) did not start: \(error.message)")
        }
        self.wrapped = wrapped
        guard let port = server.httpPort else { throw BenchError("the relay's listening line names no port: \(server.http)") }
        httpPort = port
        target = Endpoint(host: "127.0.0.1", port: listen)!
        let log = server.log
        // The engine it runs is the one asked for (an explicit --engine never falls back, but a
        // relay that did would be measured as the wrong row).
        let asked = "engine \(configuration.backend.rawValue) ("
        let flags = ", 1 worker(s), gso \(configuration.gso ? "on" : "off"), gro \(configuration.gro ? "on" : "off")"
        guard log.split(separator: "\n").contains(where: { $0.contains(asked) && $0.hasSuffix(flags) }) else {
            server.stop()
            throw BenchError("the relay did not log \"\(asked)...\(flags)\": \(log)")
        }
        let pid = server.pid
        clock = try processCPUClock(pid)
        // A build from before the threads had names (an older commit, compared with this one)
        // is measured as a whole process only; its worker column stays empty.
        worker = wrapped ? nil : CPUPlacement.threads(of: pid).first(where: { threadName(pid, $0) == "mr-worker-0" })
    }

    func pin(_ placement: Placement) { placement.pinForwarderThreads(server.pid) }

    func read() -> ForwarderReading {
        let cpu = seconds(of: clock)
        return ForwarderReading(cpuSeconds: cpu, workerCPUSeconds: worker.map { threadCPUSeconds(server.pid, $0) },
                                counters: nil)
    }

    func lifetimeCounters() throws -> ForwarderCounters {
        try RelayStatsReader.counters(port: httpPort)
    }

    /// SIGTERM to the relay (under a wrapper that forks it, strace, to the relay as well),
    /// SIGKILL after 30 s.
    func stop() {
        if wrapped {
            let children = (try? String(contentsOfFile: "/proc/\(server.pid)/task/\(server.pid)/children", encoding: .utf8)) ?? ""
            for child in children.split(separator: " ").compactMap({ pid_t($0) }) { kill(child, SIGTERM) }
        }
        if server.stop(timeoutMs: 30_000) == nil {
            FileHandle.standardError.write(Data("engine-bench: the relay did not end within 30 s of SIGTERM: killed\n".utf8))
        }
    }
}

/// A thread's name (/proc/PID/task/TID/comm).
private func threadName(_ pid: pid_t, _ thread: pid_t) -> String {
    ((try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/comm", encoding: .utf8)) ?? "")
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

/// A thread's CPU time from /proc/PID/task/TID/schedstat, whose first field is the nanoseconds
/// it ran: the sum a process CPU clock adds up over its threads, so the two compare exactly.
/// (Another process's thread has no CPU clock this process may read.)
private func threadCPUSeconds(_ pid: pid_t, _ thread: pid_t) -> Double {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/schedstat", encoding: .utf8)) ?? ""
    return Double(text.split(separator: " ").first.flatMap { UInt64($0) } ?? 0) / 1e9
}
