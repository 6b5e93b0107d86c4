import Glibc

/// An owned, non-blocking UDP socket that reports each datagram's TOS / Traffic Class byte.
///
/// The descriptor is closed in `deinit`. The socket is shared between the sending and the
/// receiving thread (send on one, receive on the other), which the kernel allows; nothing in
/// this type is mutated after `init`.
public final class UDPSocket: Sendable {
    public let fd: Int32
    public let family: Int32
    /// The address the socket is bound to (after the kernel picked a port for port 0).
    public let localAddress: SocketAddress

    /// Opens a socket bound to `address` (port 0: any free port) that marks what it sends with
    /// `tos` (IP_TOS, and IPV6_TCLASS on IPv6) and reports received TOS bytes.
    public init(bindTo address: SocketAddress, tos: UInt8) throws(LoadError) {
        let family = address.family
        self.family = family
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw LoadError("UDP socket for \(address): \(errnoText())") }
        self.fd = fd
        var on: Int32 = 1
        var value = Int32(tos)
        // Large buffers absorb the bursts of a batch, so that what is lost is the relay's doing,
        // not the generator's. The plain options first (capped at net.core.[rw]mem_max), then
        // FORCE, which root may use past the cap: the other order would undo FORCE.
        var buffer: Int32 = 4 << 20
        let int32Size = socklen_t(MemoryLayout<Int32>.size)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, int32Size)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, int32Size)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, int32Size)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, int32Size)
        var ok = true
        if family == AF_INET6 {
            ok = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_RECVTCLASS, &on, int32Size) == 0
                && setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_TCLASS, &value, int32Size) == 0
            // Dual-stack sockets receive IPv4 too, and report its TOS only with IP_RECVTOS.
            _ = setsockopt(fd, Int32(IPPROTO_IP), IP_RECVTOS, &on, int32Size)
        } else {
            ok = setsockopt(fd, Int32(IPPROTO_IP), IP_RECVTOS, &on, int32Size) == 0
                && setsockopt(fd, Int32(IPPROTO_IP), IP_TOS, &value, int32Size) == 0
        }
        guard ok else {
            let e = errnoText()
            close(fd)
            throw LoadError("UDP socket for \(address): setting TOS options: \(e)")
        }
        let rc = address.withSockaddr { bind(fd, $0, $1) }
        guard rc == 0 else {
            let e = errnoText()
            close(fd)
            throw LoadError("bind \(address): \(e)")
        }
        var local = SocketAddress()
        local.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &local.length) }
        }
        localAddress = local
    }

    deinit { close(fd) }

    /// Whether the kernel takes UDP GSO (the UDP_SEGMENT option) on this socket. The option is
    /// reset at once: sends that want GSO ask for it with a control message.
    public func acceptsGSO() -> Bool {
        var size: Int32 = 1200
        let length = socklen_t(MemoryLayout<Int32>.size)
        guard setsockopt(fd, Int32(IPPROTO_UDP), SendBatch.udpSegment, &size, length) == 0 else { return false }
        size = 0
        _ = setsockopt(fd, Int32(IPPROTO_UDP), SendBatch.udpSegment, &size, length)
        return true
    }
}
