import ClientSockets
import Glibc
import SystemSupport

/// The figures of the C reference forwarder (bench/reference/forwarder.c `--stats FILE`) in the
/// form of the relay's /v1/stats, so a run through it is measured like a run through the relay:
/// its counters from the file it stores them in after every turn (datagrams in, out, syscalls,
/// as u64 at offsets 0, 8, 16), its CPU from the kernel's CPU clock of its process (it has one
/// thread), read with nanosecond resolution like the relay's getrusage.
public struct ReferenceStats: Sendable {
    public let path: String
    public let pid: Int32
    /// The name its figures go under (the relay's stats say which engine ran).
    public let engine: String

    public init(path: String, pid: Int32, engine: String = "c-perpacket") {
        self.path = path
        self.pid = pid
        self.engine = engine
    }

    public func read() throws(LoadError) -> RelayStats {
        var clock = clockid_t()
        var now = timespec()
        let found = clock_getcpuclockid(pid, &clock)  // returns the error number itself
        guard found == 0 else { throw LoadError("CPU clock of the reference forwarder (pid \(pid)): \(errnoText(found))") }
        let read = SystemCall.outcome { Int(clock_gettime(clock, &now)) }
        guard read == .done(0) else { throw LoadError("CPU clock of the reference forwarder (pid \(pid)): \(errnoText(read))") }
        let opened = SystemCall.outcome { Int(open(path, O_RDONLY | O_CLOEXEC)) }
        guard case .done(let descriptor) = opened else { throw LoadError("--forwarder-stats \(path): \(errnoText(opened))") }
        let fd = Int32(descriptor)
        defer { SystemCall.close(fd) }
        var counters = [UInt64](repeating: 0, count: 3)
        let length = counters.withUnsafeMutableBytes { raw in SystemCall.outcome { pread(fd, raw.baseAddress, raw.count, 0) } }
        guard length == .done(24) else { throw LoadError("--forwarder-stats \(path): expected 24 bytes of counters, got \(length)") }
        return RelayStats(engine: engine, packetsIn: Double(counters[0]), packetsOut: Double(counters[1]),
                          cpuUserSeconds: Double(now.tv_sec) + Double(now.tv_nsec) / 1e9, cpuSystemSeconds: 0,
                          syscalls: Double(counters[2]))
    }
}
