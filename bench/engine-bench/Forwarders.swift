import DatagramEngine
import Foundation
import Glibc
import NetAddress

func seconds(of clock: clockid_t) -> Double {
    var now = timespec()
    clock_gettime(clock, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// A forwarder under test as a child process of one thread, so that its process CPU clock is its
/// forwarding thread's: ours as `engine-bench serve`, or the C reference
/// (bench/reference/forwarder.c), started and measured exactly alike. Both store their counters
/// after every turn in a file (`--stats`), mapped here, and check the stop flag in it. Ours used
/// to run as a thread of this process, beside the source and the sink; a thread that shares
/// their address space switches to and from them more cheaply than a process does, so the two
/// sides were not the same kind of run.
final class ForwarderProcess {
    let process = Process()
    let target: Endpoint
    private let clock: clockid_t
    private let statsPath: String
    private let stats: UnsafeMutableRawPointer

    /// `command`: the forwarder and any leading arguments (`engine-bench serve` takes the same
    /// command line), after an optional wrapper that execs it in place (valgrind, strace), so the
    /// process started is the forwarder's.
    init(command: [String], backend: String, destination: Endpoint) throws {
        let path = command[0]
        statsPath = "/tmp/engine-bench-\(getpid())-reference.stats"
        unlink(statsPath)
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = Array(command.dropFirst())
            + ["--backend", backend, "--listen", "127.0.0.1:0", "--to", destination.description, "--stats", statsPath]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // "listening on 127.0.0.1:PORT" once its sockets are bound and the stats file exists.
        var line = Data()
        while !line.contains(10) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw BenchError("\(path) exited before it was ready") }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let address = text.split(separator: " ").last.flatMap({ Endpoint(parsing: String($0)) }) else {
            throw BenchError("\(path) said \(text), expected listening on HOST:PORT")
        }
        target = address
        var clock = clockid_t()
        guard clock_getcpuclockid(process.processIdentifier, &clock) == 0 else { throw BenchError("clock_getcpuclockid failed") }
        self.clock = clock
        let fd = open(statsPath, O_RDWR)
        guard fd >= 0, let mapped = mmap(nil, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            throw BenchError("cannot map \(statsPath)")
        }
        close(fd)
        stats = mapped
    }

    /// CPU seconds (user + system) of the forwarder, from its kernel CPU clock.
    func cpuSeconds() -> Double { seconds(of: clock) }

    /// Datagrams forwarded, syscalls made, datagrams sent as GSO segments: cumulative.
    func counters() -> (forwarded: UInt64, syscalls: UInt64, gso: UInt64) {
        // Aligned 8-byte loads of values the forwarder stores with relaxed atomics: whole values,
        // at worst one turn old.
        func load(_ index: Int) -> UInt64 { (stats + index * 8).load(as: UInt64.self) }
        return (load(1), load(2), load(3))
    }

    func stop() {
        // First the stop flag in the counters file (word 7), read every turn: under valgrind a
        // signal reaches an idle forwarder only once it has run enough code, seconds of empty
        // 20 ms turns that profile-forwarder.sh would count as the datagrams' cost. The signal
        // remains the way to stop it should it not see the flag.
        (stats + 7 * 8).storeBytes(of: UInt64(1), as: UInt64.self)
        for _ in 0..<3000 where process.isRunning { usleep(10_000) }
        guard process.isRunning else {
            munmap(stats, 64)
            unlink(statsPath)
            return
        }
        // Under a wrapper that runs the forwarder as its child (strace) the forwarder is told,
        // not the wrapper, which would leave it running; the wrapper then ends with it.
        let pid = process.processIdentifier
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        let forwarders = children.split(separator: " ").compactMap { pid_t($0) }
        if forwarders.isEmpty { process.terminate() }
        for child in forwarders { kill(child, SIGTERM) }
        process.waitUntilExit()
        munmap(stats, 64)
        unlink(statsPath)
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
