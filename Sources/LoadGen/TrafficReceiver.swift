import ClientSockets
import SystemSupport
import Glibc
import STUN
import TurnClientKit

/// The receiving loop, run on its own thread: poll(2) over the run's receiving sockets, then
/// recvmmsg until each is empty, recording every datagram into `ReceiverStatistics`.
///
/// TURN client sockets (`turnClients`) and connections (`connections`, TCP and TLS) receive
/// ChannelData and Data indications, whose framing is skipped, and the server's answers to
/// refreshes, which go to `inbox` for the main thread. A datagram that arrives on a stream has
/// no marks of its own to report: it counts as received without marks. A connection that
/// fails is no longer polled; its client counts as failed (`TurnStreamConnection.failure`).
public struct TrafficReceiver: Sendable {
    public let sockets: [TrafficSocket]
    let connections: [TurnStreamConnection]
    public let streams: Int
    public let latencyFrom: UInt64
    public let bufferSize: Int
    public let turnClients: Set<Int32>
    public let inbox: ControlInbox?
    /// Where the congestion-controlled senders read what arrived (`--congestion-control`).
    public let feedback: StreamFeedback?
    /// Poll without waiting (`LoadOptions.receiverSpins`).
    public let spins: Bool
    /// Time each datagram by the kernel's stamp of its arrival where it has one, not by when
    /// this thread read it (`LoadOptions.arrivalStamps`; the sockets must ask for stamps).
    public let stamped: Bool

    public init(sockets: [TrafficSocket], streams: Int, latencyFrom: UInt64, maxDatagram: Int,
                turnClients: Set<Int32> = [], inbox: ControlInbox? = nil, feedback: StreamFeedback? = nil) {
        self.init(sockets: sockets, connections: [], streams: streams, latencyFrom: latencyFrom, maxDatagram: maxDatagram,
                  turnClients: turnClients, inbox: inbox, feedback: feedback)
    }

    init(sockets: [TrafficSocket], connections: [TurnStreamConnection], streams: Int, latencyFrom: UInt64, maxDatagram: Int,
         turnClients: Set<Int32>, inbox: ControlInbox?, feedback: StreamFeedback?, spins: Bool = false, stamped: Bool = false) {
        self.feedback = feedback
        self.spins = spins
        self.stamped = stamped
        self.sockets = sockets
        self.connections = connections
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
            + connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var stopSeenAt: UInt64 = 0
        /// One datagram of ours, or a foreign one; `tos` nil when it came on a stream.
        func record(_ payload: UnsafeRawPointer, _ length: Int, tos: UInt8?, now: UInt64) {
            guard let header = PayloadHeader.decode(payload, length: length) else {
                statistics.recordForeign()
                return
            }
            statistics.record(header, length: length, tos: tos ?? 0, marksSeen: tos != nil, now: now)
            if let feedback, header.sequence != PayloadHeader.latchSequence {
                feedback.record(stream: Int(header.stream), sequence: header.sequence, marked: (tos ?? 0) & 3 == 3)
            }
            if header.sequence != PayloadHeader.latchSequence, now > header.sendTime {
                interval.record(now - header.sendTime)
            }
        }
        while true {
            var ready = 0
            if case .done(let count) = SystemCall.outcome({ Int(poll(&polls, nfds_t(polls.count), spins ? 0 : 5)) }) { ready = count }
            let afterPoll = MonotonicClock.now()
            if ready > 0 {
                for p in polls.indices where polls[p].revents != 0 {
                    let fd = polls[p].fd
                    if p >= sockets.count {
                        var data: UInt64 = 0
                        let alive = connections[p - sockets.count].receive { frame in
                            switch TurnArrival.of(frame: frame) {
                            case .data(let bytes):
                                record(bytes.baseAddress!, bytes.count, tos: nil, now: afterPoll)
                                data += 1
                            case .control: if case .stun(let bytes) = frame { inbox?.put(fd: fd, bytes) }
                            case .malformed: statistics.recordForeign()
                            }
                        }
                        signals.received.add(data, ordering: .relaxed)
                        // poll skips negative descriptors: a failed connection stays quiet.
                        if !alive { polls[p].fd = -1 }
                        continue
                    }
                    let turn = turnClients.contains(fd)
                    while true {
                        let n = batch.receive(from: fd)
                        if n == 0 { break }
                        // One clock read per batch: the datagrams of one recvmmsg arrived together,
                        // unless the kernel stamped each (then moved onto this clock, never past now).
                        let now = MonotonicClock.now()
                        let offset = stamped ? MonotonicClock.realtimeOffset() : 0
                        var control = 0
                        for i in 0..<n {
                            var payload = batch.payload(i), length = batch.length(i)
                            if turn {
                                let bytes = UnsafeRawBufferPointer(start: payload, count: length)
                                switch TurnArrival.of(datagram: bytes) {
                                case .data(let data):
                                    payload = data.baseAddress!
                                    length = data.count
                                case .control:
                                    inbox?.put(fd: fd, bytes)
                                    control += 1
                                    continue
                                case .malformed:
                                    statistics.recordForeign()
                                    continue
                                }
                            }
                            let arrived = stamped ? batch.arrival(i).map { min($0 &- offset, now) } ?? now : now
                            record(payload, length, tos: batch.tos(i), now: arrived)
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
