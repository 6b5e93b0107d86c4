import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP client on a raw socket, so tests see exactly the bytes on the wire.
/// Every read has a receive timeout: a server bug makes a test fail, never hang.
final class RawClient {
    enum ClientError: Error, CustomStringConvertible {
        case system(String, Int32)
        case timedOut
        case malformedResponse(String)

        var description: String {
            switch self {
            case .system(let call, let code): "\(call): \(String(cString: strerror(code)))"
            case .timedOut: "timed out waiting for the server"
            case .malformedResponse(let why): "malformed response: \(why)"
            }
        }
    }

    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    let fd: Int32
    private var buffered: [UInt8] = []

    init(host: String = "127.0.0.1", port: UInt16, receiveTimeout: Int = 10) throws {
        let isIPv6 = host.contains(":")
        fd = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError.system("socket", errno) }
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        if result != 0 {
            let code = errno
            Glibc.close(fd)
            throw ClientError.system("connect", code)
        }
    }

    deinit {
        Glibc.close(fd)
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw ClientError.system("send", errno)
            }
            sent += n
        }
    }

    func shutdownWrite() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Whether the server has sent something or closed, without waiting.
    func isReadable() -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }

    /// Whether the server has reset or fully closed the connection, without reading.
    func isHungUp() -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0 && entry.revents & Int16(POLLHUP | POLLERR) != 0
    }

    /// Reads once into the buffer; false at end of file.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffered += chunk[0..<n]
                return true
            }
            if n == 0 { return false }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw ClientError.timedOut }
            throw ClientError.system("recv", errno)
        }
    }

    /// One response framed by Content-Length (none for 204), or nil if the server closed first.
    func readResponse() throws -> Response? {
        var headEnd: Int?
        while true {
            headEnd = find([13, 10, 13, 10], in: buffered)
            if headEnd != nil { break }
            if try !fill() {
                if buffered.isEmpty { return nil }
                throw ClientError.malformedResponse("closed inside the head")
            }
        }
        let head = String(decoding: buffered[0..<headEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, statusLine[0] == "HTTP/1.1", let status = Int(statusLine[1]) else {
            throw ClientError.malformedResponse(head)
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw ClientError.malformedResponse(line) }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        let bodyStart = headEnd! + 4
        while buffered.count < bodyStart + length {
            if try !fill() { throw ClientError.malformedResponse("closed inside the body") }
        }
        let body = Array(buffered[bodyStart..<bodyStart + length])
        buffered.removeFirst(bodyStart + length)
        return Response(status: status, headers: headers, body: body)
    }

    /// Everything until the server closes. A reset also counts as closed: after refusing
    /// garbage the server may close with our bytes unread.
    func readUntilClosed() throws -> [UInt8] {
        do {
            while try fill() {}
        } catch ClientError.system("recv", ECONNRESET) {
        }
        defer { buffered.removeAll() }
        return buffered
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<i + needle.count].elementsEqual(needle) {
            return i
        }
        return nil
    }
}
