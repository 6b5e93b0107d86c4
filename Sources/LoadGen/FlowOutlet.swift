import ClientSockets
import SystemSupport
import TurnClientKit

/// Where a sending loop's datagrams leave, flow by flow: datagram flows gather into sendmmsg
/// batches, one socket at a time (flows that share a socket are next to each other, so a batch
/// spans many of them); a TURN client's TCP or TLS connection takes each datagram at once.
///
/// The flows' sockets, destinations and framings are copied into plain arrays once, so sending
/// touches plain values, not class references, on the UDP path; nothing is allocated per
/// datagram on either path. Owned by one sending thread.
final class FlowOutlet {
    private let batch: SendBatch
    /// The UDP socket's descriptor of each flow, -1 for a flow on a connection.
    private let fds: [Int32]
    private let destinations: [SocketAddress]
    private let connections: [TurnStreamConnection?]
    private let framings: [TurnFraming]

    /// `maxSize`: the largest datagram; `segments`: datagrams per GSO send (1: no GSO).
    init(flows: [Flow], maxSize: Int, segments: Int = 1) {
        var fds: [Int32] = [], destinations: [SocketAddress] = [], connections: [TurnStreamConnection?] = []
        for flow in flows {
            switch flow.route {
            case .datagram(let socket, let destination):
                fds.append(socket.fd)
                destinations.append(destination)
                connections.append(nil)
            case .stream(let connection):
                fds.append(-1)
                destinations.append(SocketAddress())
                connections.append(connection)
            }
        }
        self.fds = fds
        self.destinations = destinations
        self.connections = connections
        framings = flows.map(\.framing)
        // Room for TURN framing only when some flow is framed: sender GSO cuts buffers of
        // exactly the datagram size.
        let framed = flows.contains { !$0.framing.isNone }
        batch = SendBatch(capacity: 256, bufferSize: maxSize + (framed ? TurnFraming.maxOverhead : 0), segments: segments)
    }

    /// Sends (or batches) one datagram of flow `f`, `size` bytes beginning with `header`.
    /// Returns how many datagrams left now: those of a batch that had to be flushed first, or 1
    /// when a connection took it (0 when it could not).
    @inline(__always)
    func send(_ f: Int, header: PayloadHeader, size: Int) -> Int {
        let fd = fds[f]
        guard fd >= 0 else {
            return connections[f].unsafelyUnwrapped.send(header: header, size: size, framing: framings[f]) ? 1 : 0
        }
        var sent = 0
        if batch.count > 0 && (batch.fd != fd || batch.isFull) { sent = batch.flush() }
        batch.append(fd: fd, to: destinations[f], header: header, size: size, framing: framings[f])
        return sent
    }

    /// Sends what is batched; returns how many datagrams the kernel took.
    func flush() -> Int {
        batch.count > 0 ? batch.flush() : 0
    }

    /// At the end of sending: what the connections still hold goes out, waiting up to
    /// `patienceNs` for sockets that are full.
    func finish(patienceNs: UInt64 = 200_000_000) {
        let deadline = MonotonicClock.now() + patienceNs
        var waiting = connections.compactMap { $0 }
        while !waiting.isEmpty {
            waiting = waiting.filter { !$0.flushPending() }
            if waiting.isEmpty || MonotonicClock.now() >= deadline { return }
            MonotonicClock.sleep(until: MonotonicClock.now() + 1_000_000)
        }
    }
}
