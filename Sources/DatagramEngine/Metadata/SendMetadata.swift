import Glibc
import CURing

/// The one encoder of a send's control messages: the TOS byte (IP_TOS for IPv4 and
/// IPv4-mapped destinations, IPV6_TCLASS otherwise) and, for a GSO send, the segment size.
/// Returns the length to put in msg_controllen, computed from what was written, so it cannot
/// be left wrong. The TOS cmsg always comes first: its `trafficClassLength` bytes alone are a
/// valid control area for the same datagram sent without GSO.
enum SendMetadata {
    /// Bytes of control space each outgoing message has: two int-sized messages fit.
    static let capacity = 64
    /// The bytes of the TOS cmsg (an int), the first thing `write` puts in a control area.
    static let trafficClassLength = mr_cmsg_space(4)

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
