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
    /// is established. `receiveBufferBytes` sets SO_RCVBUF before each connect (the window
    /// the server sees).
    init(count: Int, port: UInt16, receiveBufferBytes: Int32? = nil) throws {
        self.port = port
        for _ in 0..<count {
            do {
                descriptors.append(try LoopbackTCP.connect(port: port, nonBlocking: true) { descriptor in
                    if var bytes = receiveBufferBytes {
                        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size))
                    }
                })
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

    /// Sends all of `bytes` on every connection, polling while their send buffers are full;
    /// throws when a connection fails or 30 s pass.
    func sendWhole(_ bytes: [UInt8]) throws {
        let pending = try pump(bytes, stallSeconds: 30)
        guard pending == 0 else { throw LoadError("\(pending) connections to 127.0.0.1:\(port) still sending after 30 s") }
    }

    /// Sends `bytes` on every connection as far as the server takes them: returns once none
    /// has sent anything for `quietSeconds` (or all is sent), with the bytes sent in all.
    func sendUntilStalled(_ bytes: [UInt8], quietSeconds: Double) throws -> Int {
        var total = 0
        _ = try pump(bytes, stallSeconds: quietSeconds) { total += $0 }
        return total
    }

    /// Sends `bytes` on each connection, polling, until all is sent or nothing moved for
    /// `stallSeconds`; how many connections have bytes left.
    private func pump(_ bytes: [UInt8], stallSeconds: Double, sent counted: (Int) -> Void = { _ in }) throws -> Int {
        var offsets = Array(repeating: 0, count: descriptors.count)
        var pending = Array(descriptors.indices)
        var lastProgress = Date()
        while !pending.isEmpty && Date().timeIntervalSince(lastProgress) < stallSeconds {
            for index in pending {
                let sent = bytes.withUnsafeBytes {
                    Glibc.send(descriptors[index], $0.baseAddress! + offsets[index], $0.count - offsets[index], Int32(MSG_NOSIGNAL))
                }
                if sent > 0 {
                    offsets[index] += sent
                    counted(sent)
                    lastProgress = Date()
                } else if sent < 0 && errno != EAGAIN && errno != EINTR {
                    throw LoadError("send on connection \(index) to 127.0.0.1:\(port): errno \(errno)")
                }
            }
            pending = pending.filter { offsets[$0] < bytes.count }
            if !pending.isEmpty {
                var polled = pending.map { pollfd(fd: descriptors[$0], events: Int16(POLLOUT), revents: 0) }
                _ = poll(&polled, nfds_t(polled.count), 100)
            }
        }
        return pending.count
    }

    /// Closes every connection with a reset (SO_LINGER 0), as a client that vanishes does.
    func resetAll() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        for fd in descriptors { setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size)) }
        closeAll()
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
