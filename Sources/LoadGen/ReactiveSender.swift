import ClientSockets
import SystemSupport

/// The paced sending loop under `--congestion-control classic|scalable`, run on its own thread:
/// each flow sends at its own rate, which its `RateController` sets every feedback window
/// (`window`) from what the receiving thread reported (`StreamFeedback`). Between windows a
/// flow's datagrams are spread evenly, sent at most every 200 us in one sendmmsg per socket
/// run, as `TrafficSender` does.
public struct ReactiveSender: Sendable {
    public let flows: [Flow]
    public let shape: TrafficShape
    public let control: CongestionControl
    public let feedback: StreamFeedback
    public let start: UInt64
    public let end: UInt64

    /// The feedback window: about a media path's round trip.
    public static let window: UInt64 = 20_000_000

    public init(flows: [Flow], shape: TrafficShape, control: CongestionControl, feedback: StreamFeedback,
                start: UInt64, end: UInt64) {
        self.flows = flows
        self.shape = shape
        self.control = control
        self.feedback = feedback
        self.start = start
        self.end = end
    }

    /// Runs until `end` or `signals.stop`; returns each flow's mean rate over the run
    /// (datagrams/s, as the controllers set it).
    public func run(_ signals: RunSignals) -> [Double] {
        let count = flows.count
        guard count > 0 else { return [] }
        let offered = shape.datagramsPerSecond / Double(max(1, shape.streams))
        var controllers = [RateController](repeating: RateController(control, offered: offered), count: count)
        var reported = flows.map { feedback.totals(Int($0.stream)) }
        var credit = [Double](repeating: 0, count: count)
        var sequences = [UInt64](repeating: 0, count: count)
        var rateSum = [Double](repeating: 0, count: count)
        var windows = 0
        let outlet = FlowOutlet(flows: flows, maxSize: shape.maxSize)
        MonotonicClock.sleep(until: start)
        var last = start
        var nextWindow = start + Self.window
        while !signals.stop.load(ordering: .relaxed) {
            let now = MonotonicClock.now()
            if now >= end { break }
            if now >= nextWindow {
                for f in 0..<count {
                    let totals = feedback.totals(Int(flows[f].stream))
                    let before = reported[f]
                    controllers[f].update(FeedbackWindow(
                        received: totals.received &- before.received, marked: totals.marked &- before.marked,
                        lost: totals.lost > before.lost ? totals.lost - before.lost : 0))
                    reported[f] = totals
                    rateSum[f] += controllers[f].rate
                }
                windows += 1
                nextWindow += Self.window
            }
            let elapsed = Double(now - last) / 1e9
            last = now
            var sent = 0
            for f in 0..<count {
                // At most 20 ms of catching up after a stall, as TrafficSender allows.
                credit[f] = min(credit[f] + controllers[f].rate * elapsed, controllers[f].rate * 0.02 + 1)
                let n = Int(credit[f])
                credit[f] -= Double(n)
                let stream = flows[f].stream
                for _ in 0..<n {
                    let sequence = sequences[f]
                    sequences[f] = sequence + 1
                    let header = PayloadHeader(stream: stream, sequence: sequence, sendTime: now, tos: shape.tos)
                    sent += outlet.send(f, header: header, size: shape.size(stream: stream, sequence: sequence))
                }
            }
            sent += outlet.flush()
            signals.sent.add(UInt64(sent), ordering: .relaxed)
            MonotonicClock.sleep(until: min(now + TrafficSender.wakeInterval, end))
        }
        outlet.finish()
        return rateSum.map { windows == 0 ? offered : $0 / Double(windows) }
    }
}
