import Glibc
import CURing
import NetAddress

/// The one encoder of a send's control messages: the TOS byte (IP_TOS for IPv4 and
/// IPv4-mapped destinations, IPV6_TCLASS otherwise), the local address to send from when there
/// is one (IP_PKTINFO's ipi_spec_dst for IPv4 and IPv4-mapped destinations, IPV6_PKTINFO
/// otherwise) and, for a GSO send, the segment size. Returns the length to put in
/// msg_controllen, computed from what was written, so it cannot be left wrong. The segment
/// size always comes last: without its `segmentSizeLength` bytes the rest is a valid control
/// area for the same datagram sent without GSO.
enum SendMetadata {
    /// Bytes of control space each outgoing message has: the TOS int, the larger of the two
    /// address messages (in6_pktinfo) and the segment size.
    static let capacity = mr_cmsg_space(4) + mr_cmsg_space(ReceiveMetadata.pktinfo6Length) + segmentSizeLength
    /// The bytes of the segment-size cmsg (a u16), the last thing `write` puts in a control area.
    static let segmentSizeLength = mr_cmsg_space(2)

    /// `source`: the local address to send from, or a wildcard address for none (the kernel's
    /// routing chooses). An address of the other family than the destination's is left out.
    static func write(into control: UnsafeMutableRawPointer, ipv4: Bool, trafficClass: UInt8, source: Endpoint,
                      segmentSize: UInt16) -> Int {
        var value = Int32(trafficClass)
        var used = ipv4
            ? mr_cmsg_append(control, capacity, 0, Int32(IPPROTO_IP), IP_TOS, &value, 4)
            : mr_cmsg_append(control, capacity, 0, Int32(IPPROTO_IPV6), IPV6_TCLASS, &value, 4)
        if !source.isWildcard && source.isIPv4 == ipv4 {
            used = ipv4 ? appendIPv4(control, used, source) : appendIPv6(control, used, source)
        }
        if segmentSize > 0 {
            var size = segmentSize
            used = mr_cmsg_append(control, capacity, used, Int32(IPPROTO_UDP), mr_udp_segment(), &size, 2)
        }
        return used
    }

    /// struct in_pktinfo: no interface (the route decides), ipi_spec_dst the source, ipi_addr
    /// unused on a send.
    private static func appendIPv4(_ control: UnsafeMutableRawPointer, _ used: Int, _ source: Endpoint) -> Int {
        var info: (Int32, UInt32, UInt32) = (0, source.ipv4Address.bigEndian, 0)
        return mr_cmsg_append(control, capacity, used, Int32(IPPROTO_IP), IP_PKTINFO, &info, ReceiveMetadata.pktinfoLength)
    }

    /// struct in6_pktinfo: the source address, and its interface when it is link-local.
    private static func appendIPv6(_ control: UnsafeMutableRawPointer, _ used: Int, _ source: Endpoint) -> Int {
        var info: (UInt64, UInt64, UInt32) = (source.high.bigEndian, source.low.bigEndian, source.scope)
        return mr_cmsg_append(control, capacity, used, Int32(IPPROTO_IPV6), IPV6_PKTINFO, &info, ReceiveMetadata.pktinfo6Length)
    }
}
