import CLoadGen
import Glibc
import SystemSupport

/// An owned, non-blocking UDP socket that reports each datagram's TOS / Traffic Class byte.
///
/// The descriptor is closed in `deinit`. The socket is shared between the sending and the
/// receiving thread (send on one, receive on the other), which the kernel allows; nothing in
/// this type is mutated after `init`.
public final class TrafficSocket: Sendable {
    public let fd: Int32
    public let family: Int32
    /// The address the socket is bound to (after the kernel picked a port for port 0).
    public let localAddress: SocketAddress

    /// Opens a socket bound to `address` (port 0: any free port) that marks what it sends with
    /// `tos` (IP_TOS, and IPV6_TCLASS on IPv6) and reports received TOS bytes.
    public init(bindTo address: SocketAddress, tos: UInt8) throws(LoadError) {
        let family = address.family
        self.family = family
        let type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let opened = SystemCall.outcome { Int(socket(family, type, 0)) }
        guard case .done(let socketNumber) = opened else { throw LoadError("UDP socket for \(address): \(errnoText(opened))") }
        let fd = Int32(socketNumber)
        self.fd = fd
        // Large buffers absorb the bursts of a batch, so that what is lost is the relay's doing,
        // not the generator's. The plain options first (capped at net.core.[rw]mem_max), then
        // FORCE, which root may use past the cap: the other order would undo FORCE.
        for name in [SO_RCVBUF, SO_SNDBUF, SO_RCVBUFFORCE, SO_SNDBUFFORCE] {
            _ = TrafficSocket.set(fd, SOL_SOCKET, name, 4 << 20)
        }
        var failed: CallOutcome = .done(0)
        if family == AF_INET6 {
            failed = TrafficSocket.set(fd, Int32(IPPROTO_IPV6), IPV6_RECVTCLASS, 1)
            if failed == .done(0) { failed = TrafficSocket.set(fd, Int32(IPPROTO_IPV6), IPV6_TCLASS, Int32(tos)) }
            // Dual-stack sockets receive IPv4 too, and report its TOS only with IP_RECVTOS.
            _ = TrafficSocket.set(fd, Int32(IPPROTO_IP), IP_RECVTOS, 1)
        } else {
            failed = TrafficSocket.set(fd, Int32(IPPROTO_IP), IP_RECVTOS, 1)
            if failed == .done(0) { failed = TrafficSocket.set(fd, Int32(IPPROTO_IP), IP_TOS, Int32(tos)) }
        }
        guard failed == .done(0) else {
            SystemCall.close(fd)
            throw LoadError("UDP socket for \(address): setting TOS options: \(errnoText(failed))")
        }
        let bound = SystemCall.outcome { Int(address.withSockaddr { bind(fd, $0, $1) }) }
        guard bound == .done(0) else {
            SystemCall.close(fd)
            throw LoadError("bind \(address): \(errnoText(bound))")
        }
        var local = SocketAddress()
        local.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        SystemCall.ignoringFailure {
            withUnsafeMutablePointer(to: &local.storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Int(getsockname(fd, $0, &local.length)) }
            }
        }
        localAddress = local
    }

    private static func set(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) -> CallOutcome {
        var value = value
        return SystemCall.outcome { Int(setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))) }
    }

    deinit { SystemCall.close(fd) }

    /// Asks the kernel to stamp each datagram as it is queued to this socket (SO_TIMESTAMPNS,
    /// read with `ControlMessages.arrival`); false when it refuses.
    @discardableResult
    public func stampArrivals() -> Bool {
        TrafficSocket.set(fd, SOL_SOCKET, lg_so_timestampns(), 1) == .done(0)
    }

    /// Whether the kernel takes UDP GSO (the UDP_SEGMENT option) on this socket. The option is
    /// reset at once: sends that want GSO ask for it with a control message.
    public func acceptsGSO() -> Bool {
        guard TrafficSocket.set(fd, Int32(IPPROTO_UDP), lg_udp_segment(), 1200) == .done(0) else { return false }
        _ = TrafficSocket.set(fd, Int32(IPPROTO_UDP), lg_udp_segment(), 0)
        return true
    }
}
