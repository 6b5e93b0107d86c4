#if canImport(Glibc)
import Glibc
#endif
import NetAddress
import SystemSupport

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
        guard let length = socketAddress(literal, isIPv6: isIPv6, port: port, into: &storage) else {
            throw notALiteral(shown, literal)
        }
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let opened = SystemCall.outcome { Int(socket(isIPv6 ? AF_INET6 : AF_INET, type, 0)) }
        guard case .done(let socketNumber) = opened else { throw failure(shown, "cannot create a socket for", opened) }
        let fd = Int32(socketNumber)
        // SO_REUSEADDR lets a restarted server bind while old connections sit in TIME_WAIT; it
        // does not let two live servers share the port on Linux.
        var one: Int32 = 1
        SystemCall.ignoringFailure { Int(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))) }
        if isIPv6 {
            // "::" means dual-stack (the contract); other IPv6 addresses are v6 only anyway.
            var v6only: Int32 = literal == "::" ? 0 : 1
            SystemCall.ignoringFailure { Int(setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6only, socklen_t(MemoryLayout<Int32>.size))) }
        }
        var outcome = SystemCall.outcome {
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Int(bind(fd, $0, length)) }
            }
        }
        if case .done = outcome { outcome = SystemCall.outcome { Int(listen(fd, 128)) } }
        guard case .done = outcome else {
            SystemCall.close(fd)
            throw failure(shown, "cannot listen on", outcome)
        }
        return fd
    }

    /// Writes the IPv4 or IPv6 socket address for `literal` and `port`; nil when `literal` is
    /// not an address. sin_port and sin6_port share an offset; the address fields do not.
    private static func socketAddress(_ literal: String, isIPv6: Bool, port: UInt16,
                                      into storage: inout sockaddr_storage) -> socklen_t? {
        let family = isIPv6 ? AF_INET6 : AF_INET
        let addressOffset = isIPv6 ? MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)! : MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!
        let parsed = withUnsafeMutableBytes(of: &storage) { raw in
            raw.storeBytes(of: sa_family_t(family), toByteOffset: 0, as: sa_family_t.self)
            raw.storeBytes(of: port.bigEndian, toByteOffset: MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!, as: UInt16.self)
            return inet_pton(family, literal, raw.baseAddress! + addressOffset) == 1
        }
        guard parsed else { return nil }
        return socklen_t(isIPv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    }

    /// The local port of a bound socket (the kernel's choice when 0 was asked for).
    static func boundPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = SystemCall.outcome {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Int(getsockname(fd, $0, &length)) }
            }
        }
        guard case .done = named else { return 0 }
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

    private static func failure(_ shown: String, _ doing: String, _ outcome: CallOutcome) -> HTTPServerError {
        let code: Int32 = if case .failed(let code) = outcome { code } else { EAGAIN }
        let advice = BindAdvice.advice(code, option: "--http").map { "; \($0)" } ?? ""
        return HTTPServerError(
            address: shown, errno: code,
            description: "\(doing) \(shown): \(SystemCallError.explain(code))\(advice)")
    }
}
