import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A crowd of slowloris clients on its own thread: `count` connections that each send one
/// header byte per second and never finish a request, reconnecting at once whenever the server
/// closes one (as an attacker would), until `stop()`.
final class SlowlorisCrowd: Sendable {
    private let port: UInt16
    private let count: Int
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)
    /// Connections the server closed (408, eviction or refusal) that the crowd opened again.
    let reconnects = Atomic<Int>(0)

    /// Never ends: the request line, then one header whose value goes on forever.
    private static let trickle = Array("GET /hello HTTP/1.1\r\nX-Slow: ".utf8)

    init(port: UInt16, count: Int) {
        self.port = port
        self.count = count
        let thread = Thread { [self] in run() }
        thread.name = "slowloris"
        thread.start()
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        finished.wait()
    }

    private func run() {
        var sockets = (0..<count).map { _ in connectNonBlocking() }
        var sent = [Int](repeating: 0, count: count)
        var tick = 0
        while running.load(ordering: .relaxed) {
            // Every 10 ms one connection gets its byte: each gets one a second.
            usleep(10_000)
            var entries = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&entries, nfds_t(entries.count), 0)
            for (index, entry) in entries.enumerated() where entry.revents != 0 {
                // Anything from the server (a 408, a 503, end of file, a reset) ends this one.
                close(sockets[index])
                sockets[index] = connectNonBlocking()
                sent[index] = 0
                reconnects.add(1, ordering: .relaxed)
            }
            let index = tick % count
            tick += 1
            var byte = sent[index] < Self.trickle.count ? Self.trickle[sent[index]] : UInt8(ascii: "a")
            // Not yet connected (EAGAIN) or already gone: the poll above sorts it out.
            if send(sockets[index], &byte, 1, Int32(MSG_NOSIGNAL)) == 1 { sent[index] += 1 }
        }
        for fd in sockets { close(fd) }
        finished.signal()
    }

    private func connectNonBlocking() -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket: \(String(cString: strerror(errno)))")
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return fd
    }
}
