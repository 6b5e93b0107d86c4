import Glibc

/// A port free for both UDP and TCP on a loopback address, for a server that listens on both at
/// once. coturn's `turnserver` does: when its TCP bind on the port fails (an ephemeral port
/// another test's TCP connection holds, as the stream tests' thousands of connections leave
/// them), it retries that bind forever and never answers on UDP either. A port free for UDP
/// alone was enough until streams came.
public enum ServerPort {
    /// A port that a UDP and a TCP socket could both bind on `host` ("127.0.0.1" or "::1") just
    /// now; nil after 200 tries. As with any probe, another process may take it before the
    /// server does.
    public static func udpAndTCP(host: String = "127.0.0.1") -> UInt16? {
        for _ in 0..<200 {
            guard let port = bind(SOCK_DGRAM, host: host, port: 0, keep: { _ in }) else { continue }
            var tcpFree = false
            _ = bind(SOCK_STREAM, host: host, port: port) { _ in tcpFree = true }
            if tcpFree { return port }
        }
        return nil
    }

    /// Binds a socket of `type` on `host`:`port` (0: any), calls `keep` while it is bound, and
    /// returns the bound port (nil when the bind failed). The socket is closed on return.
    private static func bind(_ type: __socket_type, host: String, port: UInt16, keep: (Int32) -> Void) -> UInt16? {
        let ipv6 = host.contains(":")
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(type.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var storage = sockaddr_storage()
        var length: socklen_t
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in6.self) }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in.self) }
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard bound == 0 else { return nil }
        length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        keep(fd)
        let chosen = withUnsafeBytes(of: &storage) { raw -> UInt16 in
            ipv6 ? raw.load(as: sockaddr_in6.self).sin6_port : raw.load(as: sockaddr_in.self).sin_port
        }
        return UInt16(bigEndian: chosen)
    }
}
