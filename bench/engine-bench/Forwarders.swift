import DatagramEngine
import Foundation
import Glibc
import NetAddress

/// A forwarder under test as a child process of one thread, so that its process CPU clock is its
/// forwarding thread's: ours as `engine-bench serve`, or the C reference
/// (bench/reference/forwarder.c), started and measured exactly alike. Both store their counters
/// after every turn in a file (`--stats`), mapped here, and check the stop flag in it. Ours used
/// to run as a thread of this process, beside the source and the sink; a thread that shares
/// their address space switches to and from them more cheaply than a process does, so the two
/// sides were not the same kind of run.
final class ForwarderProcess: ForwarderUnderTest {
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
        clock = try processCPUClock(process.processIdentifier)
        let fd = open(statsPath, O_RDWR)
        guard fd >= 0, let mapped = mmap(nil, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            throw BenchError("cannot map \(statsPath)")
        }
        close(fd)
        stats = mapped
    }

    /// One thread: the pid is the forwarding thread's.
    func pin(_ placement: Placement) { placement.pinForwarder(process.processIdentifier) }

    func read() -> ForwarderReading {
        ForwarderReading(cpuSeconds: seconds(of: clock), workerCPUSeconds: nil, counters: lifetimeCounters())
    }

    func lifetimeCounters() -> ForwarderCounters {
        // Aligned 8-byte loads of values the forwarder stores with relaxed atomics: whole values,
        // at worst one turn old.
        func load(_ index: Int) -> UInt64 { (stats + index * 8).load(as: UInt64.self) }
        return ForwarderCounters(forwarded: load(1), syscalls: load(2), gso: load(3))
    }

    func stop() {
        // First the stop flag in the counters file (word 7), read every turn: under valgrind a
        // signal reaches an idle forwarder only once it has run enough code, seconds of empty
        // 20 ms turns that profile-forwarder.sh would count as the datagrams' cost. The signal
        // remains the way to stop it should it not see the flag.
        (stats + 7 * 8).storeBytes(of: UInt64(1), as: UInt64.self)
        for _ in 0..<3000 where process.isRunning { usleep(10_000) }
        terminate(process)
        munmap(stats, 64)
        unlink(statsPath)
    }
}
