import Glibc
import NetAddress
import SystemSupport
import CURing

/// Options for a UDP socket the engine will drive.
public struct SocketOptions: Sendable {
    /// SO_REUSEPORT, for one listener per worker on the same address.
    public var reusePort = false
    /// Requested SO_RCVBUF / SO_SNDBUF; when the kernel's maximum is lower and the process may
    /// (root / CAP_NET_ADMIN), the FORCE variants are used instead.
    public var receiveBufferBytes = 4 << 20
    public var sendBufferBytes = 4 << 20
    /// IP_FREEBIND: bind an address the host does not have (yet), such as a floating address
    /// that a failover moves here later.
    public var freeBind = false

    public init(reusePort: Bool = false, receiveBufferBytes: Int = 4 << 20, sendBufferBytes: Int = 4 << 20, freeBind: Bool = false) {
        self.reusePort = reusePort
        self.receiveBufferBytes = receiveBufferBytes
        self.sendBufferBytes = sendBufferBytes
        self.freeBind = freeBind
    }
}

/// A non-blocking UDP socket bound to a local endpoint, set up to report every datagram's TOS
/// byte (IP_RECVTOS, and IPV6_RECVTCLASS on IPv6 / dual-stack sockets), the kernel's drop
/// counter (SO_RXQ_OVFL) and, when bound to a wildcard address, the local address each datagram
/// was sent to (IP_PKTINFO, and IPV6_RECVPKTINFO on a dual-stack socket). Owns its descriptor
/// (`Descriptor`), closed when the object goes.
///
/// An IPv4 address gives an AF_INET socket; an IPv6 address an AF_INET6 one; the IPv6
/// wildcard `::` gives a dual-stack socket that also takes IPv4 peers.
public final class UDPSocket {
    private let owned: Descriptor
    /// The descriptor, for calls while this object is alive; this object closes it.
    public var descriptor: Int32 { owned.rawValue }
    public let family: Int32
    public let localEndpoint: Endpoint
    /// Whether the kernel accepted UDP_SEGMENT on this socket when probed.
    public let supportsGSO: Bool
    /// Buffer sizes the kernel actually granted (as getsockopt reports them).
    public let receiveBufferBytes: Int
    public let sendBufferBytes: Int

    public init(binding endpoint: Endpoint, options: SocketOptions = SocketOptions()) throws(SystemCallError) {
        let family = endpoint.isIPv4 ? AF_INET : AF_INET6
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let owned = Descriptor(taking: Int32(try SystemCall.require("cannot create a UDP socket for", address: endpoint.description,
                                                                    advice: { _ in family == AF_INET6 ? "is IPv6 enabled on this host?" : nil }) {
            Int(socket(family, type, 0))
        }))
        let fd = owned.rawValue
        // On a throw below, `owned` goes out of scope and closes the descriptor.
        if family == Int32(AF_INET6) {
            // Only the wildcard is dual-stack; a specific IPv6 address takes IPv6 peers only.
            try UDPSocket.set(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, endpoint.isWildcard ? 0 : 1, endpoint)
            try UDPSocket.set(fd, Int32(IPPROTO_IPV6), IPV6_RECVTCLASS, 1, endpoint)
        }
        if family == AF_INET || endpoint.isWildcard {
            try UDPSocket.set(fd, Int32(IPPROTO_IP), IP_RECVTOS, 1, endpoint)
        }
        if endpoint.isWildcard {
            // Which of the host's addresses each datagram reached, so that the answer leaves
            // from it: a client drops an answer from another address.
            try UDPSocket.set(fd, Int32(IPPROTO_IP), IP_PKTINFO, 1, endpoint)
            if family == Int32(AF_INET6) { try UDPSocket.set(fd, Int32(IPPROTO_IPV6), IPV6_RECVPKTINFO, 1, endpoint) }
        }
        try UDPSocket.set(fd, SOL_SOCKET, mr_so_rxq_ovfl(), 1, endpoint)
        if options.reusePort { try UDPSocket.set(fd, SOL_SOCKET, SO_REUSEPORT, 1, endpoint) }
        // At the IP level for IPv6 sockets too: the kernel's IPv6 bind reads the same flag.
        if options.freeBind { try UDPSocket.set(fd, Int32(IPPROTO_IP), IP_FREEBIND, 1, endpoint) }
        receiveBufferBytes = UDPSocket.sizeBuffer(fd, SO_RCVBUF, SO_RCVBUFFORCE, options.receiveBufferBytes)
        sendBufferBytes = UDPSocket.sizeBuffer(fd, SO_SNDBUF, SO_SNDBUFFORCE, options.sendBufferBytes)
        localEndpoint = try SocketNames.bind(fd, to: endpoint, family: family, what: "UDP")
        self.owned = owned
        self.family = family
        supportsGSO = UDPSocket.probeGSO(fd)
    }

    static func set(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32, _ endpoint: Endpoint) throws(SystemCallError) {
        var value = value
        _ = try SystemCall.require("setsockopt(\(level), \(name)) on", address: endpoint.description) {
            Int(setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)))
        }
    }

    /// Asks for `bytes`; if the kernel's maximum (net.core.[rw]mem_max) caps it lower, tries the
    /// FORCE option, which root may use. Returns what was granted; a smaller buffer is not fatal.
    static func sizeBuffer(_ fd: Int32, _ name: Int32, _ forceName: Int32, _ bytes: Int) -> Int {
        var want = Int32(clamping: bytes)
        let size = socklen_t(MemoryLayout<Int32>.size)
        var granted: Int32 = 0
        var length = size
        SystemCall.ignoringFailure { Int(setsockopt(fd, SOL_SOCKET, name, &want, size)) }
        SystemCall.ignoringFailure { Int(getsockopt(fd, SOL_SOCKET, name, &granted, &length)) }
        // The kernel reports double what it was asked for (bookkeeping overhead).
        if Int(granted) < bytes * 2 {
            SystemCall.ignoringFailure { Int(setsockopt(fd, SOL_SOCKET, forceName, &want, size)) }
            SystemCall.ignoringFailure { Int(getsockopt(fd, SOL_SOCKET, name, &granted, &length)) }
        }
        return Int(granted)
    }

    /// UDP GSO is there when the kernel takes a UDP_SEGMENT socket option; the option is reset
    /// at once because the engine asks for segmentation per send with a cmsg instead.
    static func probeGSO(_ fd: Int32) -> Bool {
        var size: Int32 = 1200
        let length = socklen_t(MemoryLayout<Int32>.size)
        guard case .done = SystemCall.outcome({ Int(setsockopt(fd, Int32(IPPROTO_UDP), mr_udp_segment(), &size, length)) }) else {
            return false
        }
        size = 0
        SystemCall.ignoringFailure { Int(setsockopt(fd, Int32(IPPROTO_UDP), mr_udp_segment(), &size, length)) }
        return true
    }

    /// Asks the kernel for each datagram's receive time (SO_TIMESTAMPNS). A kernel that refuses
    /// (none since 2.6.22) leaves the datagrams unstamped, which marks nothing.
    static func enableTimestamps(_ fd: Int32) {
        var on: Int32 = 1
        SystemCall.ignoringFailure { Int(setsockopt(fd, SOL_SOCKET, mr_so_timestampns(), &on, socklen_t(MemoryLayout<Int32>.size))) }
    }

    /// Asks the kernel to coalesce bursts for this socket (UDP_GRO, Linux 5.0); false when it
    /// refuses, and the socket then receives one datagram per call as before.
    static func enableGRO(_ fd: Int32) -> Bool {
        var on: Int32 = 1
        return SystemCall.outcome({ Int(setsockopt(fd, Int32(IPPROTO_UDP), mr_udp_gro(), &on, socklen_t(MemoryLayout<Int32>.size))) }) == .done(0)
    }
}
