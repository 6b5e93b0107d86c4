import ClientSockets
import Foundation
import Glibc
import LoadGen
import TestSupport

/// Many TCP connections to one port of 127.0.0.1 that never get anywhere: a TLS handshake
/// never finished, or a STUN message sent a byte at a time and never completed. Plain
/// non-blocking sockets, one pass over all of them per call, so a single test thread drives
/// thousands; every one is closed in `closeAll` or deinit.
final class StalledConnectionsFixture {
    let port: UInt16
    private var descriptors: [Int32] = []
    /// How many bytes of the trickled message each connection has sent.
    private var sent: [Int] = []
    /// Connections the relay has closed (end of stream or reset seen).
    private var closedByRelay: Set<Int> = []

    /// Opens `count` connections to 127.0.0.1:`port` and waits (at most 30 s) until every one
    /// is established.
    init(count: Int, port: UInt16) throws {
        self.port = port
        for _ in 0..<count {
            do {
                descriptors.append(try LoopbackTCP.connect(port: port, nonBlocking: true))
            } catch {
                closeAll()
                throw LoadError("connection \(descriptors.count + 1) of \(count): \(error) (RLIMIT_NOFILE?)")
            }
        }
        sent = Array(repeating: 0, count: count)
        try waitUntilEstablished()
    }

    deinit { closeAll() }

    var count: Int { descriptors.count }

    /// A connect completes when the kernel has the connection in the relay's accept queue;
    /// the relay may accept it later (its stats say when).
    private func waitUntilEstablished() throws {
        var pending = descriptors
        let deadline = Date().addingTimeInterval(30)
        while !pending.isEmpty && Date() < deadline {
            var polled = pending.map { pollfd(fd: $0, events: Int16(POLLOUT), revents: 0) }
            _ = poll(&polled, nfds_t(polled.count), 100)
            for entry in polled where entry.revents != 0 {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(entry.fd, SOL_SOCKET, SO_ERROR, &error, &length)
                guard error == 0 else { throw LoadError("connect to 127.0.0.1:\(port): errno \(error)") }
            }
            pending = polled.filter { $0.revents == 0 }.map(\.fd)
        }
        guard pending.isEmpty else { throw LoadError("\(pending.count) connections to 127.0.0.1:\(port) not established in 30 s") }
    }

    /// Sends `bytes` whole on each connection of `range` (a prefix of a message never finished).
    func send(_ bytes: [UInt8], on range: Range<Int>) {
        for index in range { _ = bytes.withUnsafeBytes { Glibc.send(descriptors[index], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
    }

    /// Sends the next byte of `message` on each connection the relay has not closed, while
    /// bytes are left.
    func trickle(_ message: [UInt8]) {
        for index in descriptors.indices where !closedByRelay.contains(index) && sent[index] < message.count {
            let byte = message[sent[index]]
            if withUnsafePointer(to: byte, { Glibc.send(descriptors[index], $0, 1, Int32(MSG_NOSIGNAL)) }) == 1 { sent[index] += 1 }
        }
    }

    /// How many connections the relay has closed so far (reads and drops what each has
    /// waiting, a TLS alert say, to find its end).
    func countClosedByRelay() -> Int {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let open = descriptors.indices.filter { !closedByRelay.contains($0) }
        var polled = open.map { pollfd(fd: descriptors[$0], events: Int16(POLLIN), revents: 0) }
        _ = poll(&polled, nfds_t(polled.count), 0)
        for (index, entry) in zip(open, polled) where entry.revents != 0 {
            let count = recv(entry.fd, &bytes, bytes.count, Int32(MSG_DONTWAIT))
            if count == 0 || (count < 0 && errno != EAGAIN) { closedByRelay.insert(index) }
        }
        return closedByRelay.count
    }

    /// Waits at most `seconds` until the relay has closed every connection; how many it closed.
    func waitUntilClosedByRelay(seconds: Double, trickling message: [UInt8]? = nil) -> Int {
        let deadline = Date().addingTimeInterval(seconds)
        while countClosedByRelay() < count && Date() < deadline {
            if let message { trickle(message) }
            usleep(200_000)
        }
        return countClosedByRelay()
    }

    func closeAll() {
        for fd in descriptors { close(fd) }
        descriptors = []
        sent = []
        closedByRelay = []
    }
}
