import Glibc

/// CPU time used, in seconds, as getrusage(2) reports it: for the calling thread (a worker's
/// own cost) or for the whole process.
public struct CPUTime: Sendable, Equatable {
    public var userSeconds: Double
    public var systemSeconds: Double

    public init(userSeconds: Double, systemSeconds: Double) {
        self.userSeconds = userSeconds
        self.systemSeconds = systemSeconds
    }

    public var totalSeconds: Double { userSeconds + systemSeconds }

    /// The calling thread's CPU (RUSAGE_THREAD).
    public static func thread() -> CPUTime { measure(1 /* RUSAGE_THREAD, a GNU name the Glibc module hides */) }

    /// The whole process's CPU, every thread (RUSAGE_SELF).
    public static func process() -> CPUTime { measure(RUSAGE_SELF.rawValue) }

    private static func measure(_ who: Int32) -> CPUTime {
        var usage = rusage()
        getrusage(who, &usage)
        return CPUTime(userSeconds: seconds(usage.ru_utime), systemSeconds: seconds(usage.ru_stime))
    }

    private static func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
}
