#if canImport(Glibc)
import Glibc
#endif

/// Opening the server's non-blocking listening TCP socket on an IP literal.
///
/// Contract: `open` returns a listening descriptor the caller owns and must close, or throws
/// an `HTTPServerError` whose text names the address and the remedy. The port written into
/// the error is the one asked for; `boundPort` gives the one the kernel chose for port 0.
enum ListeningSocket {
    static func open(host: String, port: UInt16) throws(HTTPServerError) -> Int32 {
        // Accept "[::1]" too: that is how the --http option spells IPv6.
        var literal = host
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        let isIPv6 = literal.contains(":")
        let shown = isIPv6 ? "[\(literal)]:\(port)" : "\(literal):\(port)"

        var storage = sockaddr_storage()
        let length: socklen_t
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, literal, &address.sin6_addr) == 1 else {
                throw notALiteral(shown, literal)
            }
            withUnsafeBytes(of: address) { source in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, literal, &address.sin_addr) == 1 else {
                throw notALiteral(shown, literal)
            }
            withUnsafeBytes(of: address) { source in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }

        let fd = socket(
            isIPv6 ? AF_INET6 : AF_INET,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure(shown, "cannot create a socket for", errno) }
        // SO_REUSEADDR lets a restarted server bind while old connections sit in TIME_WAIT; it
        // does not let two live servers share the port on Linux.
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if isIPv6 {
            // "::" means dual-stack (the contract); other IPv6 addresses are v6 only anyway.
            var v6only: Int32 = literal == "::" ? 0 : 1
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6only, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        if bound != 0 {
            let code = errno
            Glibc.close(fd)
            throw failure(shown, "cannot listen on", code)
        }
        if listen(fd, 128) != 0 {
            let code = errno
            Glibc.close(fd)
            throw failure(shown, "cannot listen on", code)
        }
        return fd
    }

    /// The local port of a bound socket (the kernel's choice when 0 was asked for).
    static func boundPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { return 0 }
        return withUnsafeBytes(of: storage) { raw in
            // sin_port and sin6_port sit at the same offset, right after the family.
            UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: MemoryLayout<sa_family_t>.size, as: UInt16.self))
        }
    }

    private static func notALiteral(_ shown: String, _ literal: String) -> HTTPServerError {
        HTTPServerError(
            address: shown, errno: nil,
            description: "cannot listen on \(shown): \"\(literal)\" is not an IPv4 or IPv6 address literal; "
                + "use e.g. 127.0.0.1, 0.0.0.0, ::1 or ::")
    }

    private static func failure(_ shown: String, _ doing: String, _ code: Int32) -> HTTPServerError {
        let advice: String
        switch code {
        case EADDRINUSE:
            advice = "; is another mediarelay running? choose another --http port"
        case EACCES, EPERM:
            advice = "; ports below 1024 need root or CAP_NET_BIND_SERVICE: choose a port of 1024 or more"
        case EADDRNOTAVAIL:
            advice = "; the address is not on any interface of this host: use one of its addresses, 127.0.0.1 or 0.0.0.0"
        case EAFNOSUPPORT:
            advice = "; this host has no IPv6: use an IPv4 address"
        case EMFILE, ENFILE:
            advice = "; too many open files: raise the limit (ulimit -n)"
        default:
            advice = ""
        }
        return HTTPServerError(
            address: shown, errno: code,
            description: "\(doing) \(shown): \(SystemCallError.explain(code))\(advice)")
    }
}
