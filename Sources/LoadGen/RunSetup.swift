import ClientSockets
import RelayObservation
import SystemSupport
import Glibc
import TurnClientKit

/// The sockets and flows of one run, and the latching that must happen before measuring.
///
/// Streams `0..<n` go forward (sender to receiver); with --bidirectional streams `n..<2n` go back.
struct RunSetup: Sendable {
    var flows: [Flow]
    var receivingSockets: [TrafficSocket]
    /// TURN clients' TCP and TLS connections, read by the receiver as well.
    var receivingConnections: [TurnStreamConnection] = []
    var streamCount: Int
    /// Datagrams that make the relay latch, in the order they must go out; each is sent as a
    /// latching datagram (sequence `latchSequence`) carrying the given stream id.
    var latchPlan: [[Flow]]
    /// Where arrivals prove that streams latched.
    var latchWitness: LatchWitness
    var streams: Int
    /// Forward-rule mode learns the reverse flows' destinations from the latching datagrams.
    var learnReverse: TrafficSocket?

    /// Session mode: one sender socket feeds leg A of every session and one receiver socket
    /// latches leg B of every session. Sessions latch independently, so sharing a source is
    /// allowed, and it lets one sendmmsg carry datagrams of many streams.
    static func sessions(_ sessions: [RelaySession], tos: UInt8, bidirectional: Bool) throws(LoadError) -> RunSetup {
        guard let first = sessions.first else { throw LoadError("no sessions to drive") }
        for s in sessions where s.legs.count < 2 { throw LoadError("session \(s.id) has \(s.legs.count) legs, need 2") }
        let any = try SocketAddress(host: first.legs[0].family == AF_INET6 ? "::" : "0.0.0.0", port: 0)
        let sender = try TrafficSocket(bindTo: any, tos: tos)
        let receiver = try TrafficSocket(bindTo: any, tos: tos)
        let n = sessions.count
        let forward = sessions.enumerated().map { Flow(socket: sender, destination: $0.element.legs[0], stream: UInt32($0.offset)) }
        let reverse = sessions.enumerated().map { Flow(socket: receiver, destination: $0.element.legs[1], stream: UInt32(n + $0.offset)) }
        return RunSetup(
            flows: bidirectional ? forward + reverse : forward,
            receivingSockets: bidirectional ? [receiver, sender] : [receiver],
            streamCount: bidirectional ? 2 * n : n,
            // Leg B first, so leg A's first datagram has somewhere to go; then B again in case
            // the first went missing.
            latchPlan: [reverse, forward, reverse],
            latchWitness: .socket(receiver), streams: n, learnReverse: nil)
    }

    /// Forward-rule mode: one client socket per stream (the rule keys clients by source
    /// address) sending to the rule's listen address; one upstream socket receiving.
    static func forwardRule(target: SocketAddress, upstream: SocketAddress, streams n: Int, tos: UInt8, bidirectional: Bool) throws(LoadError) -> RunSetup {
        let upstreamSocket = try TrafficSocket(bindTo: upstream, tos: tos)
        let any = try SocketAddress(host: target.family == AF_INET6 ? "::" : "0.0.0.0", port: 0)
        var clients: [TrafficSocket] = []
        for _ in 0..<n { clients.append(try TrafficSocket(bindTo: any, tos: tos)) }
        let forward = clients.enumerated().map { Flow(socket: $0.element, destination: target, stream: UInt32($0.offset)) }
        return RunSetup(
            flows: forward,
            receivingSockets: bidirectional ? [upstreamSocket] + clients : [upstreamSocket],
            streamCount: bidirectional ? 2 * n : n,
            latchPlan: [forward],
            latchWitness: .socket(upstreamSocket), streams: n,
            learnReverse: bidirectional ? upstreamSocket : nil)
    }

    /// TURN mode: each client sends ChannelData (or Send indications) from its own socket or
    /// connection to the server, which relays it to the peer; the reverse streams go from the
    /// peer socket to each relayed address. With an echo peer the forward datagrams come back
    /// to the clients instead, and there are no reverse streams. Nothing needs latching, but
    /// the latching datagrams prove every allocation carries traffic before the measurement
    /// starts.
    static func turn(_ turn: TurnClients, bidirectional: Bool) -> RunSetup {
        let n = turn.clients.count
        let forward = turn.clients.enumerated().map { i, client in
            let framing = turn.framing(of: client)
            return switch client.link {
            // The client's own server: a 300 may have sent it to an alternate.
            case .datagram(let socket): Flow(route: .datagram(socket, client.server), stream: UInt32(i), framing: framing)
            case .stream(let connection): Flow(route: .stream(connection), stream: UInt32(i), framing: framing)
            }
        }
        var reverse: [Flow] = []
        if bidirectional, let peer = turn.peer {
            reverse = turn.clients.enumerated().compactMap { i, client in
                client.relayed.map { Flow(socket: peer, destination: $0, stream: UInt32(n + i)) }
            }
        }
        return RunSetup(
            flows: forward + reverse,
            // The client sockets are read even one way: the answers to refreshes arrive there.
            receivingSockets: (turn.peer.map { [$0] } ?? []) + turn.clients.compactMap { client in
                if case .datagram(let socket) = client.link { return socket }
                return nil
            },
            receivingConnections: turn.clients.compactMap(\.connection),
            streamCount: reverse.isEmpty ? n : 2 * n,
            latchPlan: [forward],
            latchWitness: turn.peer.map { .socket($0) } ?? .turnClients(turn.clients.map(\.link)),
            streams: n, learnReverse: nil)
    }

    /// Sends the latching datagrams and waits (at most 2 s) until every forward stream has
    /// proved it latched by arriving at the witness. Returns how many did.
    mutating func latch(log: @Sendable (String) -> Void) throws(LoadError) -> Int {
        let receiveBatch = ReceiveBatch(capacity: 64, bufferSize: 2048)
        var seen = [Bool](repeating: false, count: streams)
        var sources = [SocketAddress?](repeating: nil, count: streams)
        var seenCount = 0
        func witnessed(_ payload: UnsafeRawPointer, _ length: Int, source: SocketAddress?) {
            guard let h = PayloadHeader.decode(payload, length: length),
                  h.sequence == PayloadHeader.latchSequence, Int(h.stream) < streams, !seen[Int(h.stream)]
            else { return }
            seen[Int(h.stream)] = true
            sources[Int(h.stream)] = source
            seenCount += 1
        }
        func drain() {
            switch latchWitness {
            case .socket(let socket):
                while true {
                    let n = receiveBatch.receive(from: socket.fd)
                    if n == 0 { return }
                    for i in 0..<n { witnessed(receiveBatch.payload(i), receiveBatch.length(i), source: receiveBatch.source(i)) }
                }
            case .turnClients(let links):
                for link in links {
                    link.readArrivals(batch: receiveBatch) { arrival, _ in
                        if case .data(let bytes) = arrival, let base = bytes.baseAddress { witnessed(base, bytes.count, source: nil) }
                    }
                }
            }
        }
        for group in latchPlan {
            let outlet = FlowOutlet(flows: group, maxSize: PayloadHeader.size)
            for (f, flow) in group.enumerated() {
                let header = PayloadHeader(stream: flow.stream, sequence: PayloadHeader.latchSequence, sendTime: MonotonicClock.now(), tos: 0)
                _ = outlet.send(f, header: header, size: PayloadHeader.size)
            }
            _ = outlet.flush()
            outlet.finish()
            MonotonicClock.sleep(until: MonotonicClock.now() + 20_000_000)
            drain()
        }
        let deadline = MonotonicClock.now() + 2_000_000_000
        while seenCount < streams, MonotonicClock.now() < deadline {
            var polls = latchWitness.fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            SystemCall.ignoringFailure { Int(poll(&polls, nfds_t(polls.count), 10)) }
            drain()
        }
        if seenCount < streams {
            log("warning: only \(seenCount) of \(streams) streams latched within 2 s; the others will count as lost")
        }
        if let socket = learnReverse {
            for s in 0..<streams {
                guard let source = sources[s] else { continue }
                flows.append(Flow(socket: socket, destination: source, stream: UInt32(streams + s)))
            }
        }
        return seenCount
    }
}

/// Where a run's latching datagrams arrive: one socket (the receiver, the upstream, TURN's own
/// peer socket), or the TURN clients themselves when an echo peer sends everything back.
enum LatchWitness: Sendable {
    case socket(TrafficSocket)
    case turnClients([TurnLink])

    var fds: [Int32] {
        switch self {
        case .socket(let socket): [socket.fd]
        case .turnClients(let links): links.map(\.fd)
        }
    }
}
