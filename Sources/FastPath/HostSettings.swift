import CBPF
import Glibc

/// What the host's stack would do with a datagram that the program must do the same way: the
/// TTL and hop limits its sockets send with, whether they label IPv6 flows, and per interface
/// its link address and reverse-path filtering. Read from /proc/sys and the interfaces of the
/// calling thread's network namespace when a program is attached; a setting changed later
/// takes effect at the next start (docs/fastpath.md says so).
struct HostSettings {
    /// net.ipv4.ip_default_ttl.
    var ttl: UInt8 = 64
    /// net.ipv6.conf.default.hop_limit: for an interface made after the attach.
    var hopLimit: UInt8 = 64
    /// net.ipv6.auto_flowlabels 1 or 3: the relay's sockets send a flow label of their own
    /// for each flow (0 and 2: none, as the relay's sockets do not opt in).
    var labelsFlows = true
    /// Every interface of the namespace, by index.
    var interfaces: [UInt32: mr_fp_interface] = [:]

    static func read() -> HostSettings {
        var settings = HostSettings()
        settings.ttl = UInt8(clamping: number("/proc/sys/net/ipv4/ip_default_ttl") ?? 64)
        settings.hopLimit = UInt8(clamping: number("/proc/sys/net/ipv6/conf/default/hop_limit") ?? 64)
        let labels = number("/proc/sys/net/ipv6/auto_flowlabels") ?? 1
        settings.labelsFlows = labels == 1 || labels == 3
        let all = number("/proc/sys/net/ipv4/conf/all/rp_filter") ?? 0
        guard let names = if_nameindex() else { return settings }
        defer { if_freenameindex(names) }
        var current = names
        while current.pointee.if_index != 0, let name = current.pointee.if_name.map({ String(cString: $0) }) {
            var interface = mr_fp_interface()
            interface.reverse_path = UInt8(clamping: max(all, number("/proc/sys/net/ipv4/conf/\(name)/rp_filter") ?? 0))
            interface.hop_limit = UInt8(clamping: number("/proc/sys/net/ipv6/conf/\(name)/hop_limit") ?? 0)
            linkAddress(name, into: &interface)
            settings.interfaces[current.pointee.if_index] = interface
            current += 1
        }
        return settings
    }

    /// The program's `config` value for a relay that takes payloads of up to `maxPayload` bytes.
    func config(maxPayload: Int) -> mr_fp_config {
        var config = mr_fp_config()
        config.max_payload = UInt32(clamping: maxPayload)
        config.ttl = ttl
        config.hop_limit = hopLimit
        config.reverse_path = interfaces.values.contains { $0.reverse_path != 0 } ? 1 : 0
        return config
    }

    /// The interface's own link address (SIOCGIFHWADDR); all zero where it has none (`lo`),
    /// which no frame is addressed to.
    private static func linkAddress(_ name: String, into interface: inout mr_fp_interface) {
        let probe = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return }
        defer { close(probe) }
        var request = ifreq()
        withUnsafeMutableBytes(of: &request.ifr_ifrn.ifrn_name) { raw in
            for (index, byte) in name.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        guard ioctl(probe, UInt(SIOCGIFHWADDR), &request) == 0 else { return }
        withUnsafeBytes(of: &request.ifr_ifru.ifru_hwaddr.sa_data) { source in
            withUnsafeMutableBytes(of: &interface.mac) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[0..<6])) }
        }
    }

    /// The first number in the file at `path`, or nil when it cannot be read.
    private static func number(_ path: String) -> Int? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = Glibc.read(descriptor, &bytes, bytes.count)
        guard count > 0 else { return nil }
        return Int(String(decoding: bytes[0..<count], as: UTF8.self).split(whereSeparator: { !$0.isNumber }).first ?? "")
    }
}
