import Glibc

/// The calling thread's name as the kernel keeps it (`comm`): what `top -H`, perf and
/// /proc/PID/task/TID/comm show, and how engine-bench tells the relay's worker from its other
/// threads. Foundation's `Thread.name` does not set it on Linux, and the Glibc module hides
/// `pthread_setname_np` (a GNU name), so it is written to /proc/thread-self/comm.
public enum ThreadName {
    /// Names the calling thread; the kernel keeps 15 bytes. Best effort: a thread without its
    /// name works the same.
    public static func set(_ name: String) {
        let opened = SystemCall.outcome { Int(open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)) }
        guard case .done(let descriptor) = opened else { return }
        let bytes = Array(name.utf8.prefix(15))
        SystemCall.ignoringFailure { bytes.withUnsafeBytes { write(Int32(descriptor), $0.baseAddress, $0.count) } }
        SystemCall.close(Int32(descriptor))
    }
}
