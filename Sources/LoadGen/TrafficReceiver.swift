import SystemSupport
import Glibc
import STUN

/// The receiving loop, run on its own thread: poll(2) over the run's receiving sockets, then
/// recvmmsg until each is empty, recording every datagram into `ReceiverStatistics`.
///
/// TURN client sockets (`turnClients`) receive ChannelData, whose 4-byte header is skipped,
/// and the server's answers to refreshes, which go to `inbox` for the main thread.
public struct TrafficReceiver: Sendable {
    public let sockets: [UDPSocket]
    public let streams: Int
    public let latencyFrom: UInt64
    public let bufferSize: Int
    public let turnClients: Set<Int32>
    public let inbox: ControlInbox?
    /// Where the congestion-controlled senders read what arrived (`--congestion-control`).
    public let feedback: StreamFeedback?

    public init(sockets: [UDPSocket], streams: Int, latencyFrom: UInt64, maxDatagram: Int,
                turnClients: Set<Int32> = [], inbox: ControlInbox? = nil, feedback: StreamFeedback? = nil) {
        self.feedback = feedback
        self.sockets = sockets
        self.streams = streams
        self.latencyFrom = latencyFrom
        self.turnClients = turnClients
        self.inbox = inbox
        // Room for more than the largest datagram sent, so a relay that pads is seen (MSG_TRUNC).
        bufferSize = max(2048, maxDatagram + 64)
    }

    /// Runs until `signals.receiveUntil` has passed (or `stop` plus a short drain).
    public func run(_ signals: RunSignals) -> ReceiverStatistics {
        var statistics = ReceiverStatistics(streams: streams, latencyFrom: latencyFrom)
        var interval = LatencyHistogram()
        var nextSecond = MonotonicClock.now() + 1_000_000_000
        let batch = ReceiveBatch(capacity: 64, bufferSize: bufferSize)
        var polls = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var stopSeenAt: UInt64 = 0
        while true {
            var ready = 0
            if case .done(let count) = SystemCall.outcome({ Int(poll(&polls, nfds_t(polls.count), 5)) }) { ready = count }
            let afterPoll = MonotonicClock.now()
            if ready > 0 {
                for p in polls.indices where polls[p].revents != 0 {
                    let fd = polls[p].fd
                    let turn = turnClients.contains(fd)
                    while true {
                        let n = batch.receive(from: fd)
                        if n == 0 { break }
                        // One clock read per batch: the datagrams of one recvmmsg arrived together.
                        let now = MonotonicClock.now()
                        var control = 0
                        for i in 0..<n {
                            var payload = batch.payload(i), length = batch.length(i)
                            if turn {
                                let bytes = UnsafeRawBufferPointer(start: payload, count: length)
                                if length > 0, !ChannelData.isChannelData(payload.load(as: UInt8.self)) {
                                    inbox?.put(fd: fd, bytes)
                                    control += 1
                                    continue
                                }
                                guard let frame = ChannelData.parse(bytes) else {
                                    statistics.recordForeign()
                                    continue
                                }
                                payload += ChannelData.headerSize
                                length = frame.length
                            }
                            guard let header = PayloadHeader.decode(payload, length: length) else {
                                statistics.recordForeign()
                                continue
                            }
                            statistics.record(header, length: length, tos: batch.tos(i), now: now)
                            if let feedback, header.sequence != PayloadHeader.latchSequence {
                                feedback.record(stream: Int(header.stream), sequence: header.sequence, marked: batch.tos(i) & 3 == 3)
                            }
                            if header.sequence != PayloadHeader.latchSequence, now > header.sendTime {
                                interval.record(now - header.sendTime)
                            }
                        }
                        signals.received.add(UInt64(n - control), ordering: .relaxed)
                        if n < batch.capacity { break }
                    }
                }
            }
            if afterPoll >= nextSecond {
                signals.intervalP99.store(interval.quantile(0.99), ordering: .relaxed)
                interval.reset()
                nextSecond += 1_000_000_000
            }
            let until = signals.receiveUntil.load(ordering: .relaxed)
            if until != 0 {
                // Everything sent has arrived: no need to wait out the drain.
                if afterPoll >= until || statistics.unique >= signals.sent.load(ordering: .relaxed) { break }
            }
            if signals.stop.load(ordering: .relaxed) {
                if stopSeenAt == 0 { stopSeenAt = afterPoll }
                if afterPoll - stopSeenAt > 300_000_000 { break }
            }
        }
        return statistics
    }
}
