import Glibc
import NetAddress
import XCTest
@testable import DatagramEngine

/// Real ways to make this kernel refuse a UDP GSO send, no mock: the engine's fallback must
/// meet the errno the kernel really returns (udp_send_skb / udp_v6_send_skb).
///
/// - `noChecksum`: transmit checksums off (SO_NO_CHECK on IPv4, UDP_NO_CHECK6_TX on IPv6):
///   GSO needs the checksum, so the kernel says EINVAL.
/// - `udpLite`: a UDP-Lite socket: the kernel segments only plain UDP and says EIO. (A device
///   without checksum offload no longer gives EIO since Linux 6.11, and this kernel has no
///   ESP for an xfrm route, the other EIO cause.) The engine only opens UDP sockets, so the
///   UDP-Lite socket is put under an engine socket's descriptor with dup2, bound to the same
///   address; both ends of the test must be UDP-Lite then, or the receiver would not hear it.
enum GSORefusal: CaseIterable, CustomStringConvertible {
    case noChecksum
    case udpLite

    static let udpSegment: Int32 = 103       // UDP_SEGMENT, <linux/udp.h>
    static let noCheck6Transmit: Int32 = 101 // UDP_NO_CHECK6_TX, <linux/udp.h>
    static let noCheck6Receive: Int32 = 102  // UDP_NO_CHECK6_RX
    static let udpLiteProtocol: Int32 = 136  // IPPROTO_UDPLITE

    /// Whether this kernel still has UDP-Lite (deprecated upstream), asked with a plain socket.
    static let kernelHasUDPLite: Bool = {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), udpLiteProtocol)
        if fd >= 0 { close(fd) }
        return fd >= 0
    }()

    var description: String { self == .noChecksum ? "no checksum (EINVAL)" : "UDP-Lite (EIO)" }

    /// The errno the kernel gives for a GSO send on a socket prepared this way.
    var expectedErrno: Int32 { self == .noChecksum ? EINVAL : EIO }

    /// An engine socket bound to `local` whose GSO sends the kernel will refuse.
    func sender(binding local: Endpoint) throws -> UDPSocket {
        let socket = try UDPSocket(binding: local)
        switch self {
        case .noChecksum:
            var on: Int32 = 1
            let (level, name) = socket.family == AF_INET6
                ? (Int32(IPPROTO_UDP), GSORefusal.noCheck6Transmit) : (SOL_SOCKET, SO_NO_CHECK)
            precondition(setsockopt(socket.descriptor, level, name, &on, 4) == 0, "checksum off: errno \(errno)")
        case .udpLite:
            GSORefusal.replaceWithUDPLite(socket)
        }
        return socket
    }

    /// The socket the refused datagrams are sent to: UDP-Lite for `udpLite`, plain UDP otherwise.
    func receiver(binding local: Endpoint) throws -> UDPSocket {
        let socket = try UDPSocket(binding: local)
        if self == .udpLite { GSORefusal.replaceWithUDPLite(socket) }
        if self == .noChecksum && socket.family == AF_INET6 {
            // IPv6 drops zero-checksum UDP unless the receiver accepts it (RFC 6935).
            var on: Int32 = 1
            precondition(setsockopt(socket.descriptor, Int32(IPPROTO_UDP), GSORefusal.noCheck6Receive, &on, 4) == 0)
        }
        return socket
    }

    /// Asks the kernel directly, outside the engine, what a GSO send on `socket` gives: a
    /// socket-wide UDP_SEGMENT and one datagram of three segments to a discard address.
    static func errnoOfGSOSend(on socket: UDPSocket, to destination: Endpoint) -> Int32 {
        var size: Int32 = 100
        precondition(setsockopt(socket.descriptor, Int32(IPPROTO_UDP), udpSegment, &size, 4) == 0)
        defer {
            size = 0
            _ = setsockopt(socket.descriptor, Int32(IPPROTO_UDP), udpSegment, &size, 4)
        }
        var storage = sockaddr_storage()
        let length = destination.write(to: &storage, family: socket.family)
        let bytes = [UInt8](repeating: 0, count: 300)
        let sent = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(socket.descriptor, raw.baseAddress, raw.count, 0, $0, length)
                }
            }
        }
        return sent < 0 ? errno : 0
    }

    /// Puts a UDP-Lite socket bound to the same address under `socket`'s descriptor, with the
    /// options the engine relies on (non-blocking, TOS reported on receipt).
    private static func replaceWithUDPLite(_ socket: UDPSocket) {
        let family = socket.family
        let lite = Glibc.socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), udpLiteProtocol)
        precondition(lite >= 0, "UDP-Lite socket: errno \(errno)")
        var on: Int32 = 1
        if family == AF_INET6 {
            precondition(setsockopt(lite, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, 4) == 0)
            precondition(setsockopt(lite, Int32(IPPROTO_IPV6), IPV6_RECVTCLASS, &on, 4) == 0)
        } else {
            precondition(setsockopt(lite, Int32(IPPROTO_IP), IP_RECVTOS, &on, 4) == 0)
        }
        var storage = sockaddr_storage()
        let length = socket.localEndpoint.write(to: &storage, family: family)
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(lite, $0, length) }
        }
        precondition(bound == 0, "UDP-Lite bind \(socket.localEndpoint): errno \(errno)")
        precondition(dup2(lite, socket.descriptor) == socket.descriptor, "dup2: errno \(errno)")
        close(lite)
    }
}
