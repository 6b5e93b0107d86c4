@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen

/// A plain socket bound where a test expects nothing (or something) to arrive, read with recv:
/// the load generator's socket code, none of the relay's.
final class DatagramSink {
    let socket: TrafficSocket

    init(host: String, port: UInt16) throws {
        socket = try TrafficSocket(bindTo: SocketAddress(host: host, port: port), tos: 0)
    }

    /// Reads a socket another helper sends on (a TURN client's, a peer's).
    init(socket: TrafficSocket) {
        self.socket = socket
    }

    /// Every datagram waiting now or arriving within `seconds`.
    func drain(seconds: Double = 0) -> [[UInt8]] {
        var arrived: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            var ready = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            let wait = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            guard poll(&ready, 1, wait) > 0 else { break }
            let count = recv(socket.fd, &buffer, buffer.count, 0)
            if count >= 0 { arrived.append(Array(buffer[..<count])) }
        } while true
        return arrived
    }
}
