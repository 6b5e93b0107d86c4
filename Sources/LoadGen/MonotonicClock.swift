import Glibc

/// Nanoseconds on CLOCK_MONOTONIC. Timestamps in datagram headers use this clock, so latency
/// figures are only meaningful when sender and receiver run on the same host.
public enum MonotonicClock {
    /// The current CLOCK_MONOTONIC time in nanoseconds.
    @inline(__always)
    public static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Sleeps until `deadline` (CLOCK_MONOTONIC ns) with an absolute sleep, so that
    /// the sleep's own overhead does not accumulate as drift.
    public static func sleep(until deadline: UInt64) {
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
    }
}
