import Glibc
import NetAddress

/// An IPv4 or IPv6 socket address held by value (a `sockaddr_storage` and its length).
public struct SocketAddress: Sendable, CustomStringConvertible {
    public var storage = sockaddr_storage()
    public var length: socklen_t = 0

    public init() {}

    /// Parses `HOST:PORT` or `[IPv6]:PORT` with NetAddress's shape parser (the relay's own);
    /// HOST may be a name here (resolved with getaddrinfo), as a load generator may be pointed
    /// at one. Throws a message that names the text.
    public init(hostPort text: String) throws(LoadError) {
        guard let (host, portText, _) = Endpoint.split(text) else {
            throw LoadError("\(text): expected HOST:PORT or [IPV6]:PORT")
        }
        guard let port = UInt16(portText), !host.isEmpty else {
            throw LoadError("\(text): expected HOST:PORT with PORT 0...65535")
        }
        try self.init(host: String(host), port: port)
    }

    public init(host: String, port: UInt16) throws(LoadError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw LoadError("\(host): cannot resolve (\(String(cString: gai_strerror(rc))))")
        }
        defer { freeaddrinfo(list) }
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
        }
        length = first.pointee.ai_addrlen
    }

    public var family: Int32 { Int32(storage.ss_family) }

    public var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            // sin_port and sin6_port sit at the same offset (2) in network order.
            UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        }
    }

    /// The numeric host, IPv6 without brackets.
    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var copy = storage
        let rc = withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST)
            }
        }
        guard rc == 0 else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Calls `body` with the address as a `sockaddr` pointer.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}

/// An error a user can meet: the message says what was being done and to what.
public struct LoadError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
