import Synchronization

/// What the sending thread, the receiving thread and the main thread (progress, Ctrl-C) share
/// during a run: counters and flags only, all atomic, so no lock sits on the packet path.
public final class RunSignals: Sendable {
    /// Set by Ctrl-C or an error: the sender stops, the receiver drains and stops.
    public let stop = Atomic<Bool>(false)
    /// CLOCK_MONOTONIC ns after which the receiver stops; 0 until the sender has finished.
    public let receiveUntil = Atomic<UInt64>(0)
    public let sent = Atomic<UInt64>(0)
    public let received = Atomic<UInt64>(0)
    /// p99 latency (ns) of the datagrams received in the last whole second, for progress lines.
    public let intervalP99 = Atomic<UInt64>(0)
    public init() {}
}
