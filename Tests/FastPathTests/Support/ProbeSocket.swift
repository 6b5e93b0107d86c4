import Glibc
import NetAddress

/// A plain blocking UDP socket for the fast path tests: the outside observer of what the
/// kernel delivered. It sends with a chosen traffic class byte and receives with the one that
/// arrived (IP_RECVTOS / IPV6_RECVTCLASS), the source, and the payload, waiting at most a
/// timeout. It shares no code with the relay's engine or with the fast path.
final class ProbeSocket {
    struct Arrival: Equatable {
        let source: Endpoint
        let trafficClass: UInt8
        let payload: [UInt8]
    }

    let local: Endpoint
    private let descriptor: Int32
    private let ipv6: Bool

    /// Binds `local` in the calling thread's network namespace.
    init(_ local: Endpoint) throws {
        ipv6 = !local.isIPv4
        descriptor = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure("socket: \(errno)") }
        self.local = local
        var on: Int32 = 1
        if ipv6 {
            setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, 4)
            setsockopt(descriptor, Int32(IPPROTO_IPV6), Self.ipv6ReceiveTrafficClass, &on, 4)
        } else {
            setsockopt(descriptor, Int32(IPPROTO_IP), Self.ipReceiveTOS, &on, 4)
        }
        var storage = sockaddr_storage()
        let length = local.write(to: &storage, family: ipv6 ? AF_INET6 : AF_INET)
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else {
            let code = errno
            close(descriptor)
            throw Failure("bind \(local): errno \(code)")
        }
    }

    deinit { close(descriptor) }

    /// Lets the kernel fragment datagrams larger than the path's MTU (IPv4: no DF bit).
    func allowFragments() {
        var dont: Int32 = 0  // IP_PMTUDISC_DONT
        if !ipv6 { setsockopt(descriptor, Int32(IPPROTO_IP), IP_MTU_DISCOVER, &dont, 4) }
    }

    func send(_ payload: [UInt8], to destination: Endpoint, trafficClass: UInt8 = 0) throws {
        var value = Int32(trafficClass)
        if ipv6 {
            setsockopt(descriptor, Int32(IPPROTO_IPV6), Self.ipv6TrafficClass, &value, 4)
        } else {
            setsockopt(descriptor, Int32(IPPROTO_IP), IP_TOS, &value, 4)
        }
        var storage = sockaddr_storage()
        let length = destination.write(to: &storage, family: ipv6 ? AF_INET6 : AF_INET)
        let sent = payload.withUnsafeBytes { bytes in
            withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(descriptor, bytes.baseAddress, bytes.count, 0, $0, length) }
            }
        }
        guard sent == payload.count else { throw Failure("sendto \(destination): errno \(errno)") }
    }

    /// The next datagram, or nil when none came within `timeout` seconds.
    func receive(timeout: Double = 1) -> Arrival? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65536)
        var control = [UInt8](repeating: 0, count: 128)
        var storage = sockaddr_storage()
        var controlLength = 0
        let count = buffer.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { controlBytes in
                withUnsafeMutablePointer(to: &storage) { address in
                    var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                        var message = msghdr(msg_name: UnsafeMutableRawPointer(address), msg_namelen: socklen_t(MemoryLayout<sockaddr_storage>.size),
                                             msg_iov: vectorPointer, msg_iovlen: 1,
                                             msg_control: controlBytes.baseAddress, msg_controllen: controlBytes.count, msg_flags: 0)
                        let received = recvmsg(descriptor, &message, 0)
                        controlLength = Int(message.msg_controllen)
                        return received
                    }
                }
            }
        }
        control.removeSubrange(min(controlLength, control.count)...)
        guard count >= 0, let source = withUnsafePointer(to: &storage, { Endpoint(reading: UnsafeRawPointer($0), length: socklen_t(MemoryLayout<sockaddr_storage>.size)) }) else {
            return nil
        }
        return Arrival(source: source, trafficClass: Self.trafficClass(in: control), payload: Array(buffer.prefix(count)))
    }

    /// Walks the control messages (cmsghdr: length as size_t, level, type, data, each padded to
    /// 8 bytes) for IP_TOS (one byte) or IPV6_TCLASS (an int).
    private static func trafficClass(in control: [UInt8]) -> UInt8 {
        var offset = 0
        while offset + 16 <= control.count {
            let length = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Int.self) }
            let level = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 8, as: Int32.self) }
            let type = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: Int32.self) }
            if level == Int32(IPPROTO_IP) && type == IP_TOS { return control[offset + 16] }
            if level == Int32(IPPROTO_IPV6) && type == ipv6TrafficClass {
                return UInt8(truncatingIfNeeded: control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 16, as: Int32.self) })
            }
            guard length >= 16 else { break }
            offset += (length + 7) & ~7
        }
        return 0xff
    }

    /// Linux's numbers (<linux/in.h>, <linux/in6.h>); Glibc's module hides some of them.
    private static let ipReceiveTOS: Int32 = 13
    private static let ipv6ReceiveTrafficClass: Int32 = 66
    private static let ipv6TrafficClass: Int32 = 67

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
