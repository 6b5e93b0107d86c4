import Glibc
import CURing
import NetAddress
import SystemSupport

/// Options for a listening TCP socket the engine will accept on.
public struct ListenerOptions: Sendable {
    /// SO_REUSEPORT, for one listener per worker on the same address (the kernel spreads the
    /// connections over them by 4-tuple hash, as it spreads UDP datagrams).
    public var reusePort = false
    /// Connections the kernel completes and queues before the engine accepts them; capped by
    /// net.core.somaxconn. Beyond it the kernel drops SYNs (or answers with cookies).
    public var backlog: Int32 = 4096
    /// IP_FREEBIND, as `SocketOptions.freeBind`.
    public var freeBind = false

    public init(reusePort: Bool = false, backlog: Int32 = 4096, freeBind: Bool = false) {
        self.reusePort = reusePort
        self.backlog = backlog
        self.freeBind = freeBind
    }
}

/// A non-blocking TCP socket listening on a local endpoint. An IPv4 address gives an AF_INET
/// socket, an IPv6 address an IPv6-only one, and the wildcard `::` a dual-stack socket that
/// also accepts IPv4 clients (their addresses IPv4-mapped, like UDP's). Owns its descriptor
/// (`Descriptor`); once registered (`DatagramEngine.listen`) the engine keeps the object, and
/// with it the descriptor, until `unregister`.
public final class TCPListener {
    private let owned: Descriptor
    /// The descriptor, for calls while this object is alive; this object closes it.
    public var descriptor: Int32 { owned.rawValue }
    public let family: Int32
    public let localEndpoint: Endpoint

    public init(binding endpoint: Endpoint, options: ListenerOptions = ListenerOptions()) throws(SystemCallError) {
        let family = endpoint.isIPv4 ? AF_INET : AF_INET6
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let owned = Descriptor(taking: Int32(try SystemCall.require("cannot create a TCP socket for", address: endpoint.description) {
            Int(socket(family, type, 0))
        }))
        let fd = owned.rawValue
        // On a throw below, `owned` goes out of scope and closes the descriptor.
        if family == Int32(AF_INET6) {
            try UDPSocket.set(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, endpoint.isWildcard ? 0 : 1, endpoint)
        }
        // A restarted relay must bind again at once while its old connections sit in TIME_WAIT.
        try UDPSocket.set(fd, SOL_SOCKET, SO_REUSEADDR, 1, endpoint)
        if options.reusePort { try UDPSocket.set(fd, SOL_SOCKET, SO_REUSEPORT, 1, endpoint) }
        if options.freeBind { try UDPSocket.set(fd, Int32(IPPROTO_IP), IP_FREEBIND, 1, endpoint) }
        localEndpoint = try SocketNames.bind(fd, to: endpoint, family: family, what: "TCP")
        _ = try SystemCall.require("cannot listen on TCP", address: endpoint.description) { Int(Glibc.listen(fd, options.backlog)) }
        self.owned = owned
        self.family = family
    }
}
