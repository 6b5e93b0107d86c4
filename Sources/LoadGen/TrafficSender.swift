import ClientSockets
import SystemSupport
import TurnClientKit
/// One direction of one stream: where its datagrams leave and how they are framed.
public struct Flow: Sendable {
    /// A UDP socket sending to an address, or a TURN client's TCP or TLS connection.
    enum Route: Sendable {
        case datagram(TrafficSocket, SocketAddress)
        case stream(TurnStreamConnection)
    }

    let route: Route
    public let stream: UInt32
    /// TURN framing (ChannelData or a Send indication); none for plain UDP.
    var framing = TurnFraming.none

    public init(socket: TrafficSocket, destination: SocketAddress, stream: UInt32) {
        route = .datagram(socket, destination)
        self.stream = stream
    }

    init(route: Route, stream: UInt32, framing: TurnFraming) {
        self.route = route
        self.stream = stream
        self.framing = framing
    }

    /// The UDP socket the flow sends from; nil for a TURN client's connection.
    public var socket: TrafficSocket? {
        if case .datagram(let socket, _) = route { return socket }
        return nil
    }
}

/// The paced sending loop, run on its own thread.
///
/// One pacer drives all flows: tick `t` belongs to flow `t % flows.count`, so every flow gets
/// its share at an even spacing. The ticks due at a wake-up are gathered into sendmmsg
/// batches; flows that share a socket are kept next to each other so a batch can span many
/// of them (one socket can feed many relay sessions, each latching the same source).
public struct TrafficSender: Sendable {
    public let flows: [Flow]
    public let shape: TrafficShape
    public let start: UInt64
    public let end: UInt64
    /// Each video frame leaves as one GSO send (`--sender-gso`).
    public let gso: Bool

    /// The shortest time between two wake-ups of the sender: 200 us, below the jitter of
    /// any real network path, so the bursts it creates (at 200k/s, 40 datagrams spread over
    /// all streams) are small.
    public static let wakeInterval: UInt64 = 200_000

    public init(flows: [Flow], shape: TrafficShape, start: UInt64, end: UInt64, gso: Bool = false) {
        self.flows = flows
        self.shape = shape
        self.start = start
        self.end = end
        self.gso = gso
    }

    /// Datagrams per GSO send: a whole frame, within the kernel's 64 segments and 64 KiB.
    static func segmentsPerSend(_ shape: TrafficShape) -> Int {
        min(shape.datagramsPerTick, 64, 65_000 / max(1, shape.maxSize))
    }

    /// Runs until `end` or `signals.stop`; returns the ticks the pacer had to forgive.
    public func run(_ signals: RunSignals) -> UInt64 {
        let count = flows.count
        guard count > 0 else { return 0 }
        var sequences = [UInt64](repeating: 0, count: count)
        let streams = flows.map(\.stream)
        let perTick = shape.datagramsPerTick
        let outlet = FlowOutlet(flows: flows, maxSize: shape.maxSize, segments: gso ? Self.segmentsPerSend(shape) : 1)
        // Allow catching up on a 20 ms stall at most, in bursts of at most 64 ticks.
        let maxDebt = UInt64(max(64, shape.ticksPerSecond * Double(count) / Double(max(1, shape.streams)) * 0.02))
        // The shape's rate is per direction for `shape.streams` flows; a reverse direction adds
        // flows at the same per-flow rate.
        let ticksPerSecond = shape.ticksPerSecond * Double(count) / Double(max(1, shape.streams))
        var pacer = Pacer(ticksPerSecond: ticksPerSecond, start: start, maxBurst: 64, maxDebt: maxDebt)
        var cursor = 0
        let tos = shape.tos
        var lastWake: UInt64 = 0
        while !signals.stop.load(ordering: .relaxed) {
            let now = MonotonicClock.now()
            if now >= end { break }
            let due = pacer.due(at: now)
            if due == 0 {
                // Waking for every tick at 200k/s would cost a syscall per datagram and hand
                // the relay one-datagram batches; waking at most every `wakeInterval` lets the
                // ticks due meanwhile leave in one sendmmsg while staying on schedule.
                MonotonicClock.sleep(until: min(max(pacer.nextDeadline, lastWake + Self.wakeInterval), end))
                continue
            }
            lastWake = now
            let everyFlow = due / count, extra = due % count
            var sent = 0
            var f = cursor
            for i in 0..<min(due, count) {
                let n = (everyFlow + (i < extra ? 1 : 0)) * perTick
                for _ in 0..<n {
                    let sequence = sequences[f]
                    sequences[f] = sequence + 1
                    let header = PayloadHeader(stream: streams[f], sequence: sequence, sendTime: now, tos: tos)
                    sent += outlet.send(f, header: header, size: shape.size(stream: streams[f], sequence: sequence))
                }
                f += 1
                if f == count { f = 0 }
            }
            cursor = (cursor + due) % count
            sent += outlet.flush()
            signals.sent.add(UInt64(sent), ordering: .relaxed)
        }
        outlet.finish()
        return pacer.skipped
    }
}
