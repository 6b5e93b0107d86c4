import Glibc
import CURing
import NetAddress

/// What the kernel said about one received datagram in its control messages. The one walker
/// over received control messages, for every backend: recvmsg / recvmmsg fill a msghdr's
/// control area, io_uring a control area inside the provided buffer; both are bytes here.
///
/// A new control message is one more field, one more branch in `read`, and its space in
/// `capacity`.
struct ReceiveMetadata {
    /// The control space of every receive (recvmsg vectors and io_uring buffers alike): room for
    /// every message the kernel may send with one datagram at once: the timestamp, the drop
    /// counter, UDP_GRO, the TOS byte (IP_TOS for an IPv4 datagram, also on a dual-stack
    /// socket, else IPV6_TCLASS) and, on a socket bound to a wildcard address, the destination
    /// address (IP_PKTINFO for an IPv4 datagram, IPV6_PKTINFO for every datagram on an IPv6
    /// socket: an IPv4 datagram on a dual-stack socket brings both). A message that does not fit
    /// is left out silently (MSG_CTRUNC): too little space loses the last messages of exactly
    /// the datagrams that came with the most. A multiple of 8, so an io_uring buffer's payload
    /// after it stays aligned. The one figure every backend sizes its receive control space by.
    static let capacity = mr_cmsg_space(MemoryLayout<timespec>.size) + 3 * mr_cmsg_space(MemoryLayout<Int32>.size)
        + mr_cmsg_space(pktinfoLength) + mr_cmsg_space(pktinfo6Length)
    /// The kernel's struct in_pktinfo (ifindex, spec_dst, addr) and struct in6_pktinfo (addr,
    /// ifindex).
    static let pktinfoLength = 12
    static let pktinfo6Length = 20

    var trafficClass: UInt8 = 0
    /// UDP_GRO: the buffer holds datagrams of this size back to back (the last may be
    /// shorter); 0 when the kernel delivered one datagram.
    var segmentSize = 0
    /// The socket's cumulative drop counter (SO_RXQ_OVFL), when the kernel sent it.
    var overflowCount: UInt32? = nil
    /// When the kernel received the datagram (SO_TIMESTAMPNS), in CLOCK_REALTIME nanoseconds;
    /// 0 when the socket does not ask for it. A GRO buffer's datagrams share one.
    var timestamp: UInt64 = 0
    /// The local address the datagram was sent to (IP_PKTINFO / IPV6_PKTINFO, on sockets bound
    /// to a wildcard address), port 0; all zero (`::`) when the kernel did not say.
    var localAddress = Endpoint(high: 0, low: 0, port: 0)

    /// Reads the control messages in `length` bytes at `control`; unknown ones are ignored.
    @inline(__always)
    init(control: UnsafeMutableRawPointer?, length: Int) {
        guard let control else { return }
        var cmsg = mr_cmsg_walk(control, length, nil)
        while let current = cmsg {
            read(current)
            cmsg = mr_cmsg_walk(control, length, current)
        }
    }

    @inline(__always)
    private mutating func read(_ cmsg: UnsafeMutablePointer<cmsghdr>) {
        let level = cmsg.pointee.cmsg_level
        let type = cmsg.pointee.cmsg_type
        let data = UnsafeRawPointer(mr_cmsg_data(cmsg)!)
        let length = Int(cmsg.pointee.cmsg_len) - Int(mr_cmsg_len(0))
        if level == Int32(IPPROTO_IP), type == IP_TOS, length >= 1 {
            // IP_RECVTOS delivers a single byte.
            trafficClass = data.load(as: UInt8.self)
        } else if level == Int32(IPPROTO_IPV6), type == IPV6_TCLASS, length >= 4 {
            trafficClass = UInt8(truncatingIfNeeded: data.loadUnaligned(as: Int32.self))
        } else if level == Int32(IPPROTO_UDP), type == mr_udp_gro(), length >= 4 {
            // The kernel puts the coalesced skb's gso_size as an int.
            segmentSize = Int(data.loadUnaligned(as: Int32.self))
        } else if level == SOL_SOCKET, type == mr_so_rxq_ovfl(), length >= 4 {
            overflowCount = data.loadUnaligned(as: UInt32.self)
        } else if level == Int32(IPPROTO_IP), type == IP_PKTINFO, length >= ReceiveMetadata.pktinfoLength {
            // ipi_spec_dst: the local address a reply should come from (the destination itself
            // for a unicast datagram), in network order after the interface index.
            localAddress = Endpoint(ipv4: UInt32(bigEndian: data.loadUnaligned(fromByteOffset: 4, as: UInt32.self)), port: 0)
        } else if level == Int32(IPPROTO_IPV6), type == IPV6_PKTINFO, length >= ReceiveMetadata.pktinfo6Length,
                  !localAddress.isIPv4 {
            // An IPv4 datagram on a dual-stack socket brings IP_PKTINFO too, whose ipi_spec_dst
            // is the one to answer from (for a broadcast, this one names the broadcast address).
            let high = UInt64(bigEndian: data.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            let low = UInt64(bigEndian: data.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            // The interface matters only to a link-local address: it names which link's.
            let scope = high >> 54 == 0x3FA ? data.loadUnaligned(fromByteOffset: 16, as: UInt32.self) : 0
            localAddress = Endpoint(high: high, low: low, port: 0, scope: scope)
        } else if level == SOL_SOCKET, type == mr_scm_timestampns(), length >= MemoryLayout<timespec>.size {
            let stamp = data.loadUnaligned(as: timespec.self)
            timestamp = UInt64(stamp.tv_sec) &* 1_000_000_000 &+ UInt64(stamp.tv_nsec)
        }
    }
}
