import Foundation
import Glibc

/// A test harness: an AF_PACKET socket on one interface of the calling thread's network
/// namespace. It sends whole Ethernet frames exactly as given (the kernel neither checks nor
/// finishes them: a wrong checksum stays wrong), and it reads every frame that arrives on the
/// interface with the VLAN tag the kernel took off (PACKET_AUXDATA), as a sniffer on the link.
final class RawLink {
    /// A frame that arrived on the interface.
    struct Arrival {
        let bytes: [UInt8]
        /// The VLAN tag control information that came with it, nil when untagged.
        let vlan: UInt16?
    }

    /// <linux/if_packet.h> and <linux/if_ether.h>, which Glibc's module does not bring.
    private static let everyProtocol: UInt16 = 0x0003
    private static let packetLevel: Int32 = 263
    private static let auxiliaryData: Int32 = 8
    private static let outgoing: UInt8 = 4
    private static let vlanValid: UInt32 = 1 << 4

    /// struct sockaddr_ll, field for field.
    private struct LinkLayerAddress {
        var family: UInt16 = UInt16(AF_PACKET)
        var networkProtocol: UInt16 = 0
        var index: Int32 = 0
        var hardwareType: UInt16 = 0
        var packetType: UInt8 = 0
        var addressLength: UInt8 = 0
        var address: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0)
    }

    let interface: String
    /// The interface's own link address.
    let mac: [UInt8]
    private let descriptor: Int32

    init(interface: String) throws {
        self.interface = interface
        let index = if_nametoindex(interface)
        guard index != 0 else { throw LinkFailure("no interface \(interface) here") }
        let protocolAll = Self.everyProtocol.bigEndian
        let descriptor = socket(AF_PACKET, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Int32(protocolAll))
        guard descriptor >= 0 else { throw LinkFailure("socket(AF_PACKET): errno \(errno)") }
        var address = LinkLayerAddress(networkProtocol: protocolAll, index: Int32(index))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<LinkLayerAddress>.size)) }
        }
        var on: Int32 = 1
        guard bound == 0, setsockopt(descriptor, Self.packetLevel, Self.auxiliaryData, &on, 4) == 0 else {
            let code = errno
            close(descriptor)
            throw LinkFailure("binding the packet socket to \(interface): errno \(code)")
        }
        self.descriptor = descriptor
        do {
            mac = try Self.linkAddress(interface)
        } catch {
            close(descriptor)
            throw error
        }
    }

    deinit { close(descriptor) }

    /// Sends `frame` out of the interface as it is.
    func send(_ frame: [UInt8]) throws {
        let sent = frame.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == frame.count else { throw LinkFailure("sending a frame on \(interface): errno \(errno)") }
    }

    /// Drops what has arrived so far.
    func discard() { _ = arrivals(for: 0) }

    /// The frames that arrive from elsewhere (not those this host sends) within `seconds`.
    func arrivals(for seconds: Double) -> [Arrival] {
        var arrivals: [Arrival] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var control = [UInt8](repeating: 0, count: 128)
        repeat {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let wait = max(0, Int32(deadline.timeIntervalSinceNow * 1000))
            guard poll(&ready, 1, wait) > 0 else { continue }
            var from = LinkLayerAddress()
            let (length, vlan) = buffer.withUnsafeMutableBytes { raw in
                control.withUnsafeMutableBytes { controlRaw in
                    withUnsafeMutablePointer(to: &from) { fromPointer in
                        var vector = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
                        return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                            var message = msghdr(msg_name: UnsafeMutableRawPointer(fromPointer), msg_namelen: socklen_t(MemoryLayout<LinkLayerAddress>.size),
                                                 msg_iov: vectorPointer, msg_iovlen: 1, msg_control: controlRaw.baseAddress,
                                                 msg_controllen: controlRaw.count, msg_flags: 0)
                            let count = recvmsg(descriptor, &message, Int32(MSG_DONTWAIT))
                            return (count, count > 0 ? Self.vlan(in: controlRaw, length: Int(message.msg_controllen)) : nil)
                        }
                    }
                }
            }
            if length > 0 && from.packetType != Self.outgoing {
                arrivals.append(Arrival(bytes: Array(buffer[0..<length]), vlan: vlan))
            }
        } while Date() < deadline
        return arrivals
    }

    /// The VLAN tag in a tpacket_auxdata control message (tp_status, tp_len, tp_snaplen,
    /// tp_mac, tp_net, tp_vlan_tci, tp_vlan_tpid), when TP_STATUS_VLAN_VALID says it holds one.
    private static func vlan(in control: UnsafeMutableRawBufferPointer, length: Int) -> UInt16? {
        var offset = 0
        while offset + 16 <= length {
            let size = Int(control.loadUnaligned(fromByteOffset: offset, as: Int.self))
            let level = control.loadUnaligned(fromByteOffset: offset + 8, as: Int32.self)
            let type = control.loadUnaligned(fromByteOffset: offset + 12, as: Int32.self)
            if level == packetLevel && type == auxiliaryData && size >= 16 + 20 {
                let status = control.loadUnaligned(fromByteOffset: offset + 16, as: UInt32.self)
                let tci = control.loadUnaligned(fromByteOffset: offset + 16 + 16, as: UInt16.self)
                return status & vlanValid != 0 ? tci : nil
            }
            guard size >= 16 else { break }
            offset += (size + 7) & ~7
        }
        return nil
    }

    /// `name`'s link address (SIOCGIFHWADDR), in the calling thread's namespace.
    static func linkAddress(_ name: String) throws -> [UInt8] {
        let probe = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw LinkFailure("socket: errno \(errno)") }
        defer { close(probe) }
        var request = ifreq()
        withUnsafeMutableBytes(of: &request.ifr_ifrn.ifrn_name) { raw in
            for (index, byte) in name.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        guard ioctl(probe, UInt(SIOCGIFHWADDR), &request) == 0 else { throw LinkFailure("SIOCGIFHWADDR \(name): errno \(errno)") }
        return withUnsafeBytes(of: &request.ifr_ifru.ifru_hwaddr.sa_data) { Array($0[0..<6]) }
    }

    struct LinkFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
