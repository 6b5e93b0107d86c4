@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen

/// A test peer built from the load generator's own socket code (LoadGen's TrafficSocket and its
/// recvmmsg ReceiveBatch with its own cmsg walk), which shares nothing with DatagramEngine.
/// What it reads is what the kernel delivered: a defect symmetric between the relay engine's
/// send and receive (say ECT(0) written for ECT(1) and read back as ECT(1)) cannot hide from it,
/// as it could from `Peers`, which is the same engine as the relay.
final class IndependentPeer {
    /// One received datagram: its bytes, TOS / Traffic Class byte and source.
    struct Arrival {
        let bytes: [UInt8]
        let tos: UInt8
        let source: SocketAddress
    }

    /// Open to a LoadGen TURN client that speaks its control path on this same socket
    /// (TurnServerFixture): the server knows an allocation by the client's 5-tuple.
    let socket: TrafficSocket
    private let batch = ReceiveBatch(capacity: 64, bufferSize: 2048)

    /// A socket bound to `host` ("127.0.0.1" or "::1"), any free port.
    init(host: String) throws {
        socket = try TrafficSocket(bindTo: SocketAddress(host: host, port: 0), tos: 0)
    }

    var port: UInt16 { socket.localAddress.port }

    /// Sends `bytes` to `host`:`port` marked with `tos` (IP_TOS / IPV6_TCLASS set just before).
    func send(_ bytes: [UInt8], tos: UInt8, to host: String, port: UInt16) throws {
        try send(bytes, tos: tos, to: SocketAddress(host: host, port: port))
    }

    func send(_ bytes: [UInt8], tos: UInt8, to destination: SocketAddress) throws {
        var value = Int32(tos)
        let (level, name) = socket.family == AF_INET6 ? (Int32(IPPROTO_IPV6), IPV6_TCLASS) : (Int32(IPPROTO_IP), IP_TOS)
        guard setsockopt(socket.fd, level, name, &value, 4) == 0 else { throw LoadError("setting TOS: errno \(errno)") }
        let sent = bytes.withUnsafeBytes { raw in
            destination.withSockaddr { sendto(socket.fd, raw.baseAddress, raw.count, 0, $0, $1) }
        }
        guard sent == bytes.count else { throw LoadError("sendto \(destination): errno \(errno)") }
    }

    /// What arrives until `expected` datagrams have come or `seconds` pass.
    func receive(expected: Int, seconds: Double = 10) -> [Arrival] {
        var arrivals: [Arrival] = []
        let deadline = Date().addingTimeInterval(seconds)
        while arrivals.count < expected && Date() < deadline {
            var ready = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            let count = batch.receive(from: socket.fd)
            for index in 0..<count {
                let bytes = Array(UnsafeRawBufferPointer(start: batch.payload(index), count: batch.length(index)))
                arrivals.append(Arrival(bytes: bytes, tos: batch.tos(index), source: batch.source(index)))
            }
        }
        return arrivals
    }

    /// Whether a datagram is waiting now (nothing is read).
    var hasPending: Bool {
        var ready = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
        return poll(&ready, 1, 0) > 0
    }
}
