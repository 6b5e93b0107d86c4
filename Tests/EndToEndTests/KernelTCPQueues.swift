import ClientSockets
import Foundation
import Glibc

/// The kernel's queues of the TCP sockets on one port, read from /proc/net/tcp and
/// /proc/net/tcp6 (what `ss` shows as Send-Q and Recv-Q): for an established socket, `tx_queue`
/// is the bytes sent and not yet acknowledged by the peer, `rx_queue` the bytes received and
/// not yet read by the process.
struct KernelTCPQueues {
    struct Socket {
        let localPort: UInt16
        let remotePort: UInt16
        let sendQueue: Int
        let receiveQueue: Int
    }

    /// The established sockets whose local port is `port` (a server's side of its connections).
    let serverSide: [Socket]
    /// The established sockets whose remote port is `port` (the clients' side).
    let clientSide: [Socket]

    init(port: UInt16) throws {
        var server: [Socket] = []
        var client: [Socket] = []
        for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = try Self.read(file)
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                // sl local_address rem_address st tx_queue:rx_queue ...; state 01 is ESTABLISHED.
                guard fields.count > 4, fields[3] == "01" else { continue }
                let queues = fields[4].split(separator: ":")
                guard let local = Self.port(fields[1]), let remote = Self.port(fields[2]), queues.count == 2,
                      let send = Int(queues[0], radix: 16), let receive = Int(queues[1], radix: 16) else { continue }
                let socket = Socket(localPort: local, remotePort: remote, sendQueue: send, receiveQueue: receive)
                if local == port { server.append(socket) } else if remote == port { client.append(socket) }
            }
        }
        serverSide = server
        clientSide = client
    }

    /// The whole of a /proc file, read to its end: such a file says its size is 0, and a
    /// reader that trusts the size (Foundation's String(contentsOfFile:)) gets its first page only.
    private static func read(_ path: String) throws -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw LoadError("open \(path): errno \(errno)") }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = Glibc.read(descriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw LoadError("read \(path): errno \(errno)") }
            if count == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes += chunk[0..<count]
        }
    }

    /// "0100007F:1F90" → 8080.
    private static func port(_ field: Substring) -> UInt16? {
        field.split(separator: ":").last.flatMap { UInt16($0, radix: 16) }
    }

    /// Bytes on their way from the clients into the server process: unacknowledged on the
    /// clients' side, or waiting in the server's receive queues.
    var bytesInFlightToServer: Int {
        clientSide.reduce(0) { $0 + $1.sendQueue } + serverSide.reduce(0) { $0 + $1.receiveQueue }
    }
}
