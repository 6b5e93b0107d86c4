import SystemSupport
import Glibc

/// The sockets and flows of one run, and the latching that must happen before measuring.
///
/// Streams `0..<n` go forward (sender to receiver); with --bidirectional streams `n..<2n` go back.
struct RunSetup: Sendable {
    var flows: [Flow]
    var receivingSockets: [UDPSocket]
    var streamCount: Int
    /// Datagrams that make the relay latch, in the order they must go out; each is sent as a
    /// latching datagram (sequence `latchSequence`) carrying the given stream id.
    var latchPlan: [[Flow]]
    /// The socket whose arrivals prove that streams latched, with how many are expected.
    var latchWitness: UDPSocket
    var streams: Int
    /// Forward-rule mode learns the reverse flows' destinations from the latching datagrams.
    var learnReverse: UDPSocket?

    /// Session mode: one sender socket feeds leg A of every session and one receiver socket
    /// latches leg B of every session. Sessions latch independently, so sharing a source is
    /// allowed, and it lets one sendmmsg carry datagrams of many streams.
    static func sessions(_ sessions: [RelaySession], tos: UInt8, bidirectional: Bool) throws(LoadError) -> RunSetup {
        guard let first = sessions.first else { throw LoadError("no sessions to drive") }
        for s in sessions where s.legs.count < 2 { throw LoadError("session \(s.id) has \(s.legs.count) legs, need 2") }
        let any = try SocketAddress(host: first.legs[0].family == AF_INET6 ? "::" : "0.0.0.0", port: 0)
        let sender = try UDPSocket(bindTo: any, tos: tos)
        let receiver = try UDPSocket(bindTo: any, tos: tos)
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
            latchWitness: receiver, streams: n, learnReverse: nil)
    }

    /// Forward-rule mode: one client socket per stream (the rule keys clients by source
    /// address) sending to the rule's listen address; one upstream socket receiving.
    static func forwardRule(target: SocketAddress, upstream: SocketAddress, streams n: Int, tos: UInt8, bidirectional: Bool) throws(LoadError) -> RunSetup {
        let upstreamSocket = try UDPSocket(bindTo: upstream, tos: tos)
        let any = try SocketAddress(host: target.family == AF_INET6 ? "::" : "0.0.0.0", port: 0)
        var clients: [UDPSocket] = []
        for _ in 0..<n { clients.append(try UDPSocket(bindTo: any, tos: tos)) }
        let forward = clients.enumerated().map { Flow(socket: $0.element, destination: target, stream: UInt32($0.offset)) }
        return RunSetup(
            flows: forward,
            receivingSockets: bidirectional ? [upstreamSocket] + clients : [upstreamSocket],
            streamCount: bidirectional ? 2 * n : n,
            latchPlan: [forward],
            latchWitness: upstreamSocket, streams: n,
            learnReverse: bidirectional ? upstreamSocket : nil)
    }

    /// TURN mode: each client sends ChannelData from its own socket to the server, which
    /// relays it to the peer socket; the reverse streams go from the peer socket to each
    /// relayed address. Nothing needs latching, but the latching datagrams prove every
    /// allocation carries traffic before the measurement starts.
    static func turn(_ turn: TurnClients, bidirectional: Bool) -> RunSetup {
        let n = turn.clients.count
        let forward = turn.clients.enumerated().map {
            // The client's own server: a 300 may have sent it to an alternate.
            Flow(socket: $0.element.socket, destination: $0.element.server, stream: UInt32($0.offset), channel: TurnClients.channel)
        }
        let reverse = turn.clients.enumerated().compactMap { i, client in
            client.relayed.map { Flow(socket: turn.peer, destination: $0, stream: UInt32(n + i)) }
        }
        return RunSetup(
            flows: bidirectional ? forward + reverse : forward,
            // The client sockets are read even one way: the answers to refreshes arrive there.
            receivingSockets: [turn.peer] + turn.clients.map(\.socket),
            streamCount: bidirectional ? 2 * n : n,
            latchPlan: [forward],
            latchWitness: turn.peer, streams: n, learnReverse: nil)
    }

    /// Sends the latching datagrams and waits (at most 2 s) until every forward stream has
    /// proved it latched by arriving at the witness socket. Returns how many did.
    mutating func latch(log: @Sendable (String) -> Void) throws(LoadError) -> Int {
        let sendBatch = SendBatch(capacity: 256, bufferSize: PayloadHeader.size + SendBatch.channelHeaderSize)
        let receiveBatch = ReceiveBatch(capacity: 64, bufferSize: 2048)
        var seen = [Bool](repeating: false, count: streams)
        var sources = [SocketAddress?](repeating: nil, count: streams)
        var seenCount = 0
        func drain() {
            while true {
                let n = receiveBatch.receive(from: latchWitness.fd)
                if n == 0 { return }
                for i in 0..<n {
                    guard let h = PayloadHeader.decode(receiveBatch.payload(i), length: receiveBatch.length(i)),
                          h.sequence == PayloadHeader.latchSequence, Int(h.stream) < streams, !seen[Int(h.stream)]
                    else { continue }
                    seen[Int(h.stream)] = true
                    sources[Int(h.stream)] = receiveBatch.source(i)
                    seenCount += 1
                }
            }
        }
        for group in latchPlan {
            for flow in group {
                if sendBatch.count > 0 && (sendBatch.fd != flow.socket.fd || sendBatch.isFull) { sendBatch.flush() }
                let header = PayloadHeader(stream: flow.stream, sequence: PayloadHeader.latchSequence, sendTime: MonotonicClock.now(), tos: 0)
                sendBatch.append(fd: flow.socket.fd, to: flow.destination, header: header, size: PayloadHeader.size, channel: flow.channel)
            }
            if sendBatch.count > 0 { sendBatch.flush() }
            MonotonicClock.sleep(until: MonotonicClock.now() + 20_000_000)
            drain()
        }
        let deadline = MonotonicClock.now() + 2_000_000_000
        while seenCount < streams, MonotonicClock.now() < deadline {
            var p = pollfd(fd: latchWitness.fd, events: Int16(POLLIN), revents: 0)
            SystemCall.ignoringFailure { Int(poll(&p, 1, 10)) }
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
