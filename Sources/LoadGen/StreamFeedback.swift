import Synchronization

/// What the receiving thread tells the sending thread about each stream, for
/// `--congestion-control`. The generator's sender and receiver are one process, so the
/// feedback a real receiver would send back in packets (RTCP, QUIC ACK frames, TCP's ECE) is
/// shared memory here: per stream, totals the receiver stores and the sender reads each
/// feedback window. It arrives without a network delay, which makes the senders react faster
/// than over a real path, never slower.
///
/// Contract: one writer (the receiver) and one reader (the sender); relaxed atomics, since
/// each counter is read on its own and a window that misses the last few datagrams counts them
/// in the next one.
public final class StreamFeedback: Sendable {
    final class Counters: Sendable {
        let received = Atomic<UInt64>(0)
        let marked = Atomic<UInt64>(0)
        /// The highest sequence received plus one: below it, what did not arrive is lost.
        let expected = Atomic<UInt64>(0)
    }

    private let streams: [Counters]

    public init(streams: Int) {
        self.streams = (0..<streams).map { _ in Counters() }
    }

    /// The receiver got datagram `sequence` of `stream`, CE-marked or not.
    @inline(__always)
    func record(stream: Int, sequence: UInt64, marked: Bool) {
        guard stream < streams.count else { return }
        let counters = streams[stream]
        counters.received.add(1, ordering: .relaxed)
        if marked { counters.marked.add(1, ordering: .relaxed) }
        if sequence &+ 1 > counters.expected.load(ordering: .relaxed) { counters.expected.store(sequence &+ 1, ordering: .relaxed) }
    }

    /// Totals so far for `stream`: received, CE-marked, lost (reordering counts as lost until
    /// the late datagram comes).
    func totals(_ stream: Int) -> FeedbackWindow {
        let counters = streams[stream]
        let received = counters.received.load(ordering: .relaxed)
        let expected = counters.expected.load(ordering: .relaxed)
        return FeedbackWindow(received: received, marked: counters.marked.load(ordering: .relaxed),
                              lost: expected > received ? expected - received : 0)
    }
}
