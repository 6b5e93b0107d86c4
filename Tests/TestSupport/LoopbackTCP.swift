import Glibc

/// TCP connections to 127.0.0.1 for tests that speak to a server by hand (HTTP, TURN over TCP
/// and TLS, connections that stall on purpose): the address and the connect written once.
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
        let type = Int32(SOCK_STREAM.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        let descriptor = socket(AF_INET, type, 0)
        guard descriptor >= 0 else { throw Failure(description: "socket for 127.0.0.1:\(port): errno \(errno)") }
        configure(descriptor)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
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
}
