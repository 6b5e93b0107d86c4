import Glibc

/// Nanoseconds on CLOCK_MONOTONIC: timeouts and rates must not jump when someone sets the wall
/// clock. Timestamps the load generator puts in datagrams use it too, so latency figures are
/// meaningful only when sender and receiver share a host. Loops read it once per turn, not per
/// datagram.
public enum MonotonicClock {
    @inlinable @inline(__always)
    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// CLOCK_REALTIME less this clock, now, in nanoseconds: subtracted from a kernel timestamp
    /// (SO_TIMESTAMPNS is CLOCK_REALTIME), it gives the moment on this clock. Read it once per
    /// turn, not per datagram: it moves only when the wall clock is set or slewed.
    public static func realtimeOffset() -> UInt64 {
        var real = timespec()
        let monotonic = now()
        clock_gettime(CLOCK_REALTIME, &real)
        return (UInt64(real.tv_sec) &* 1_000_000_000 &+ UInt64(real.tv_nsec)) &- monotonic
    }

    /// `seconds` as nanoseconds; negative values count as 0.
    public static func nanoseconds(_ seconds: Double) -> UInt64 {
        UInt64(max(0, seconds) * 1_000_000_000)
    }

    /// Sleeps until `deadline` (nanoseconds on this clock) with an absolute sleep, so that the
    /// sleep's own overhead does not accumulate as drift. A signal does not cut it short.
    public static func sleep(until deadline: UInt64) {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
    }
}
