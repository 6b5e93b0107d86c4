import Glibc

/// TCP on 127.0.0.1 for tests that speak to a server by hand (HTTP, TURN over TCP and TLS,
/// connections that stall on purpose) or carry TLS sessions' ciphertext to and from openssl's
/// own client and server: the address, the connect, the listener written once. Every wait is
/// bounded by `poll`, so a peer that stops answering fails a test instead of hanging it.
public enum LoopbackTCP {
    /// Why a socket could not be made or connected, with the errno.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A socket connected to 127.0.0.1:`port`; `configure` runs on it before the connect (a
    /// receive buffer set later would not shape the window the server sees). `nonBlocking`
    /// returns as soon as the connect has begun: poll for POLLOUT and read SO_ERROR to learn
    /// how it ended. The caller owns the descriptor; on a throw it is closed.
    public static func connect(port: UInt16, nonBlocking: Bool = false, configure: (Int32) -> Void = { _ in }) throws(Failure) -> Int32 {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let descriptor = socket(AF_INET, type, 0)
        guard descriptor >= 0 else { throw Failure(description: "socket for 127.0.0.1:\(port): errno \(errno)") }
        configure(descriptor)
        var address = loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 || (nonBlocking && errno == EINPROGRESS) else {
            let code = errno
            close(descriptor)
            throw Failure(description: "connect to 127.0.0.1:\(port): errno \(code)")
        }
        return descriptor
    }

    /// A listening socket on 127.0.0.1 and the port the kernel chose.
    public static func listen() -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(fd >= 0, "socket: \(errno)")
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        precondition(bound == 0 && Glibc.listen(fd, 8) == 0, "bind/listen: \(errno)")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// The next connection on `listener`, or nil when none came within `seconds`.
    public static func accept(_ listener: Int32, seconds: Double) -> Int32? {
        guard waitReadable(listener, seconds: seconds) else { return nil }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { return nil }
        // Not inherited by the openssl children the tests start meanwhile.
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    /// Whether `fd` has something to read (or its end) within `seconds`.
    public static func waitReadable(_ fd: Int32, seconds: Double) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, Int32(seconds * 1000)) == 1
    }

    /// Sends all of `bytes`; false when the connection is gone.
    public static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}
