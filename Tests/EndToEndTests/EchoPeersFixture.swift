@testable import ClientSockets
import Glibc
import Synchronization
@testable import LoadGen

/// Echo peers on 127.1.0.1 ... 127.1.0.N, all on one port, the addresses mediarelay-load's
/// `--turn-peers each` counts up from 127.1.0.1 (loopback answers for the whole of 127/8, so
/// nothing needs configuring). Each sends every datagram back to where it came from, on its own
/// thread, and remembers the sources, so a test can see which relayed address reached which
/// peer. LoadGen's socket code, none of the relay's. `stop` once, at the end.
final class EchoPeersFixture: Sendable {
    /// What one peer echoed: how many datagrams, and from which addresses.
    struct Echoed: Sendable {
        var datagrams = 0
        var sources: Set<String> = []
    }

    let sockets: [TrafficSocket]
    let port: UInt16
    private let stopping = Atomic<Bool>(false)
    private let outcome = ThreadOutcome<[Echoed]>()

    init(count: Int) throws {
        let first = try TrafficSocket(bindTo: SocketAddress(host: "127.1.0.1", port: 0), tos: 0)
        port = first.localAddress.port
        var sockets = [first]
        for i in 1..<count { sockets.append(try TrafficSocket(bindTo: SocketAddress(host: "127.1.0.\(i + 1)", port: port), tos: 0)) }
        self.sockets = sockets
        outcome.start(name: "echo-peers") { [self] in echo() }
    }

    /// The first peer's HOST:PORT, as `--turn-peer` takes it.
    var firstAddress: String { "127.1.0.1:\(port)" }

    /// Ends the echoing; what each peer echoed, in address order.
    func stop() -> [Echoed] {
        stopping.store(true, ordering: .relaxed)
        return outcome.wait()
    }

    private func echo() -> [Echoed] {
        let batch = ReceiveBatch(capacity: 64, bufferSize: 2048)
        var echoed = [Echoed](repeating: Echoed(), count: sockets.count)
        var polls = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        while !stopping.load(ordering: .relaxed) {
            guard poll(&polls, nfds_t(polls.count), 20) > 0 else { continue }
            for (p, socket) in sockets.enumerated() where polls[p].revents != 0 {
                let count = batch.receive(from: socket.fd)
                for i in 0..<count {
                    let source = batch.source(i)
                    _ = source.withSockaddr { sendto(socket.fd, batch.payload(i), batch.length(i), 0, $0, $1) }
                    echoed[p].datagrams += 1
                    echoed[p].sources.insert(source.description)
                }
            }
        }
        return echoed
    }
}
