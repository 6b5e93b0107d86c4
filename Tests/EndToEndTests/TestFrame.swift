import Glibc

/// A test helper: one Ethernet frame carrying a UDP datagram, built field by field so that a
/// test can get any of them wrong on purpose (another host's link address, a VLAN tag, a bad
/// IPv4 header checksum, the wrong IP version, a wrong or zero UDP checksum), and read back
/// from the bytes a sniffer saw (`Seen`).
struct TestFrame {
    enum UDPChecksum { case right, wrong, zero }

    var destinationMAC: [UInt8]
    var sourceMAC: [UInt8]
    /// An 802.1Q tag's control information (priority and VLAN id); nil: untagged.
    var vlan: UInt16?
    /// 4 or 16 bytes each.
    var source: [UInt8]
    var destination: [UInt8]
    var sourcePort: UInt16
    var destinationPort: UInt16
    var payload: [UInt8]
    var ttl: UInt8 = 64
    var dontFragment = false
    var flowLabel: UInt32 = 0
    /// The version written in the IP header; nil: the one the ethertype says.
    var version: UInt8?
    var headerChecksumRight = true
    var udpChecksum = UDPChecksum.right

    init(from source: String, _ sourcePort: UInt16, to destination: String, _ destinationPort: UInt16,
         macs: (source: [UInt8], destination: [UInt8]), payload: [UInt8]) {
        self.source = TestFrame.address(source)
        self.destination = TestFrame.address(destination)
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        sourceMAC = macs.source
        destinationMAC = macs.destination
        self.payload = payload
    }

    var isIPv4: Bool { source.count == 4 }

    var bytes: [UInt8] {
        var frame = destinationMAC + sourceMAC
        if let vlan { frame += [0x81, 0x00, UInt8(vlan >> 8), UInt8(vlan & 0xFF)] }
        frame += isIPv4 ? [0x08, 0x00] : [0x86, 0xDD]
        let udpLength = 8 + payload.count
        var udp = TestFrame.be16(sourcePort) + TestFrame.be16(destinationPort) + TestFrame.be16(UInt16(udpLength)) + [0, 0] + payload
        var checksum = ~TestFrame.fold(TestFrame.sum(pseudoHeader(udpLength)) + TestFrame.sum(udp))
        if checksum == 0 { checksum = 0xFFFF }
        switch udpChecksum {
        case .right: break
        case .wrong: checksum ^= 0x0101
        case .zero: checksum = 0
        }
        udp[6] = UInt8(checksum >> 8)
        udp[7] = UInt8(checksum & 0xFF)
        if isIPv4 {
            var header: [UInt8] = [(version ?? 4) << 4 | 5, 0] + TestFrame.be16(UInt16(20 + udpLength)) + [0x12, 0x34]
            header += [dontFragment ? 0x40 : 0, 0, ttl, UInt8(IPPROTO_UDP), 0, 0] + source + destination
            var headerChecksum = ~TestFrame.fold(TestFrame.sum(header))
            if !headerChecksumRight { headerChecksum ^= 0x0404 }
            header[10] = UInt8(headerChecksum >> 8)
            header[11] = UInt8(headerChecksum & 0xFF)
            frame += header
        } else {
            let label = flowLabel & 0xF_FFFF
            frame += [(version ?? 6) << 4, UInt8(label >> 16), UInt8((label >> 8) & 0xFF), UInt8(label & 0xFF)]
            frame += TestFrame.be16(UInt16(udpLength)) + [UInt8(IPPROTO_UDP), ttl] + source + destination
        }
        return frame + udp
    }

    private func pseudoHeader(_ udpLength: Int) -> [UInt8] {
        isIPv4 ? source + destination + [0, UInt8(IPPROTO_UDP)] + TestFrame.be16(UInt16(udpLength))
            : source + destination + [0, 0] + TestFrame.be16(UInt16(udpLength)) + [0, 0, 0, UInt8(IPPROTO_UDP)]
    }

    /// What a sniffed frame carried: its IP header's choices and its UDP datagram.
    struct Seen: Equatable {
        var dontFragment: Bool
        /// TTL or hop limit.
        var ttl: UInt8
        var flowLabel: UInt32
        var destinationPort: UInt16
        var checksumRight: Bool
        var payload: [UInt8]

        /// Reads an untagged frame; nil for anything but UDP over IPv4 or IPv6 (or a fragment).
        init?(_ frame: [UInt8]) {
            guard frame.count >= 14 + 28 else { return nil }
            let type = UInt16(frame[12]) << 8 | UInt16(frame[13])
            let ip = Array(frame[14...])
            let udpStart: Int
            let pseudo: [UInt8]
            if type == 0x0800, ip[9] == UInt8(IPPROTO_UDP), ip[6] & 0x3F == 0, ip[7] == 0 {
                udpStart = Int(ip[0] & 0x0F) * 4
                dontFragment = ip[6] & 0x40 != 0
                ttl = ip[8]
                flowLabel = 0
                let length = Int(ip[2]) << 8 | Int(ip[3])
                guard length <= ip.count, length >= udpStart + 8 else { return nil }
                pseudo = Array(ip[12..<20]) + [0, UInt8(IPPROTO_UDP)] + TestFrame.be16(UInt16(length - udpStart))
            } else if type == 0x86DD, ip.count >= 48, ip[6] == UInt8(IPPROTO_UDP) {
                udpStart = 40
                dontFragment = false
                ttl = ip[7]
                flowLabel = UInt32(ip[1] & 0x0F) << 16 | UInt32(ip[2]) << 8 | UInt32(ip[3])
                let length = Int(ip[4]) << 8 | Int(ip[5])
                pseudo = Array(ip[8..<40]) + [0, 0] + TestFrame.be16(UInt16(length)) + [0, 0, 0, UInt8(IPPROTO_UDP)]
            } else {
                return nil
            }
            let udpLength = Int(ip[udpStart + 4]) << 8 | Int(ip[udpStart + 5])
            guard udpLength >= 8, udpStart + udpLength <= ip.count else { return nil }
            let udp = Array(ip[udpStart..<(udpStart + udpLength)])
            destinationPort = UInt16(udp[2]) << 8 | UInt16(udp[3])
            let zero = udp[6] == 0 && udp[7] == 0
            checksumRight = (zero && type == 0x0800) || TestFrame.fold(TestFrame.sum(pseudo) + TestFrame.sum(udp)) == 0xFFFF
            payload = Array(udp[8...])
        }
    }

    static func address(_ text: String) -> [UInt8] {
        if text.contains(":") {
            var address = in6_addr()
            precondition(inet_pton(AF_INET6, text, &address) == 1, "not an IPv6 address: \(text)")
            return withUnsafeBytes(of: &address) { Array($0) }
        }
        var address = in_addr()
        precondition(inet_pton(AF_INET, text, &address) == 1, "not an IPv4 address: \(text)")
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    /// The ones' complement sum of `bytes` as 16-bit words in network order (an odd last byte
    /// padded with zero), not yet folded.
    static func sum(_ bytes: [UInt8]) -> UInt32 {
        var total: UInt32 = 0
        var index = 0
        while index < bytes.count {
            total &+= UInt32(bytes[index]) << 8 | (index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0)
            index += 2
        }
        return total
    }

    static func fold(_ sum: UInt32) -> UInt16 {
        var value = sum
        while value > 0xFFFF { value = (value & 0xFFFF) + (value >> 16) }
        return UInt16(value)
    }
}
