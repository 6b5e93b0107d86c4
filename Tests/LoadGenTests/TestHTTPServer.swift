@testable import ClientSockets
import Foundation
import Glibc
import Synchronization
@testable import LoadGen

/// A one-thread HTTP server on 127.0.0.1:0 that answers each connection with the next canned
/// response and remembers the requests it read. A nil response means: accept, read, never answer.
final class TestHTTPServer: Sendable {
    let port: UInt16
    private let fd: Int32
    private let requests = Mutex<[String]>([])

    init(responses: [String?]) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = try SocketAddress(host: "127.0.0.1", port: 0)
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, 16) == 0 else { throw LoadError("test server bind") }
        address.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address.storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &address.length) } }
        port = address.port
        self.fd = fd
        let listener = fd
        let thread = Thread { [self] in
            for response in responses {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                requests.withLock { $0.append(Self.readRequest(client)) }
                if let response {
                    let bytes = Array(response.utf8)
                    _ = bytes.withUnsafeBytes { send(client, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
                    close(client)
                } else {
                    // Hold the connection open without answering until the client gives up.
                    var b: UInt8 = 0
                    _ = recv(client, &b, 1, 0)
                    close(client)
                }
            }
        }
        thread.start()
    }

    var received: [String] { requests.withLock { $0 } }
    var url: String { "http://127.0.0.1:\(port)" }

    private static func readRequest(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: bytes, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let length = text[..<end.lowerBound].split(separator: "\r\n")
                    .first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if text.utf8.count - text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound) >= length { return text }
            }
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return text }
            bytes += chunk[0..<n]
        }
    }

    deinit { close(fd) }

    static func answer(_ status: String, _ body: String, extra: String = "") -> String {
        "HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)"
    }
}
