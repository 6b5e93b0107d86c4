import Glibc
import CURing

/// What the kernel told us about one received datagram in its control messages.
struct ReceiveControl {
    var trafficClass: UInt8 = 0
    /// The socket's cumulative drop counter (SO_RXQ_OVFL), when the kernel sent it.
    var overflowCount: UInt32? = nil

    /// Reads one control message; unknown ones are ignored.
    mutating func read(_ cmsg: UnsafeMutablePointer<cmsghdr>) {
        let level = cmsg.pointee.cmsg_level
        let type = cmsg.pointee.cmsg_type
        let data = UnsafeRawPointer(mr_cmsg_data(cmsg)!)
        let length = Int(cmsg.pointee.cmsg_len) - Int(mr_cmsg_len(0))
        if level == Int32(IPPROTO_IP), type == IP_TOS, length >= 1 {
            // IP_RECVTOS delivers a single byte.
            trafficClass = data.load(as: UInt8.self)
        } else if level == Int32(IPPROTO_IPV6), type == IPV6_TCLASS, length >= 4 {
            trafficClass = UInt8(truncatingIfNeeded: data.loadUnaligned(as: Int32.self))
        } else if level == SOL_SOCKET, type == mr_so_rxq_ovfl(), length >= 4 {
            overflowCount = data.loadUnaligned(as: UInt32.self)
        }
    }

    /// Reads the control messages of a msghdr filled by recvmsg / recvmmsg.
    static func parse(_ message: UnsafeMutablePointer<msghdr>) -> ReceiveControl {
        var control = ReceiveControl()
        var cmsg = mr_cmsg_firsthdr(message)
        while let current = cmsg {
            control.read(current)
            cmsg = mr_cmsg_nexthdr(message, current)
        }
        return control
    }
}

/// Writes the control messages of one send: the TOS byte (IP_TOS for IPv4 and IPv4-mapped
/// destinations, IPV6_TCLASS otherwise) and, for a GSO send, the segment size. Returns the
/// length to put in msg_controllen, computed from what was written, so it cannot be wrong.
enum SendControl {
    /// Bytes of control space each outgoing message has: two int-sized messages fit.
    static let capacity = 64

    static func write(into control: UnsafeMutableRawPointer, ipv4: Bool, trafficClass: UInt8, segmentSize: UInt16) -> Int {
        var value = Int32(trafficClass)
        var used = ipv4
            ? mr_cmsg_append(control, capacity, 0, Int32(IPPROTO_IP), IP_TOS, &value, 4)
            : mr_cmsg_append(control, capacity, 0, Int32(IPPROTO_IPV6), IPV6_TCLASS, &value, 4)
        if segmentSize > 0 {
            var size = segmentSize
            used = mr_cmsg_append(control, capacity, used, Int32(IPPROTO_UDP), mr_udp_segment(), &size, 2)
        }
        return used
    }
}
