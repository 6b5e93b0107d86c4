import Glibc

/// A port free on a loopback address just now, found by binding port 0 (the one probe every
/// test uses; `PortBlock` is for a relay's whole `--ports` range, claimed against other tests).
/// As with any probe, another process may take the port before the server does.
///
/// `udpAndTCP`: for a server that listens on both at once. coturn's `turnserver` does: when its
/// TCP bind on the port fails (an ephemeral port another test's TCP connection holds, as the
/// stream tests' thousands of connections leave them), it retries that bind forever and never
/// answers on UDP either.
public enum FreePort {
    /// A port that a UDP and a TCP socket could both bind on `host` ("127.0.0.1" or "::1").
    public static func udpAndTCP(host: String = "127.0.0.1") throws(PortBlockError) -> UInt16 {
        for _ in 0..<200 {
            guard let port = bind(SOCK_DGRAM, host: host, port: 0, keep: { _ in }) else { continue }
            var tcpFree = false
            _ = bind(SOCK_STREAM, host: host, port: port) { _ in tcpFree = true }
            if tcpFree { return port }
        }
        throw .noFreePort("UDP and TCP on \(host)")
    }

    /// A port a TCP socket could bind on `host`.
    public static func tcp(host: String = "127.0.0.1") throws(PortBlockError) -> UInt16 {
        guard let port = bind(SOCK_STREAM, host: host, port: 0, keep: { _ in }) else { throw .noFreePort("TCP on \(host)") }
        return port
    }

    /// A port a UDP socket could bind on `host`.
    public static func udp(host: String = "127.0.0.1") throws(PortBlockError) -> UInt16 {
        guard let port = bind(SOCK_DGRAM, host: host, port: 0, keep: { _ in }) else { throw .noFreePort("UDP on \(host)") }
        return port
    }

    /// Binds a socket of `type` on `host`:`port` (0: any), calls `keep` while it is bound, and
    /// returns the bound port (nil when the bind failed). The socket is closed on return.
    private static func bind(_ type: __socket_type, host: String, port: UInt16, keep: (Int32) -> Void) -> UInt16? {
        let ipv6 = host.contains(":")
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(type.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard var (storage, length) = socketAddress(host: host, port: port) else { return nil }
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

    /// `host` (a numeric IPv4 or IPv6 address) and `port` as the C calls take them, with the
    /// length of the family's address; nil for a host that is not a numeric address.
    public static func socketAddress(host: String, port: UInt16) -> (sockaddr_storage, socklen_t)? {
        var storage = sockaddr_storage()
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in6.self) }
            return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
        withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in.self) }
        return (storage, socklen_t(MemoryLayout<sockaddr_in>.size))
    }
}
