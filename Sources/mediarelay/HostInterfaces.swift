import Glibc
import NetAddress
import SystemSupport

/// This host's network interfaces as getifaddrs(3) sees them in the process's namespace: each
/// name once, whether it is UP, and its IPv4 and IPv6 addresses (port 0). Start-up only: it
/// allocates. The fast path picks the interfaces to attach to from it; the TURN peer policy and
/// session latching take every address of it as the relay's own.
struct HostInterfaces {
    struct Interface: Equatable {
        let name: String
        var isUp: Bool
        var addresses: [Endpoint]
    }

    /// In the order getifaddrs lists them.
    let all: [Interface]

    init(_ all: [Interface]) { self.all = all }

    /// Every interface's addresses, down ones included (IPv6 ones keep their scope).
    var addresses: [Endpoint] { all.flatMap(\.addresses) }

    /// Reads them now.
    static func read() throws(SystemCallError) -> HostInterfaces {
        var list: UnsafeMutablePointer<ifaddrs>?
        _ = try SystemCall.require("getifaddrs") { Int(getifaddrs(&list)) }
        defer { freeifaddrs(list) }
        var found: [Interface] = []
        var entry = list
        while let current = entry {
            entry = current.pointee.ifa_next
            let name = String(cString: current.pointee.ifa_name)
            let isUp = current.pointee.ifa_flags & UInt32(IFF_UP) != 0
            var index = found.firstIndex { $0.name == name }
            if index == nil {
                found.append(Interface(name: name, isUp: isUp, addresses: []))
                index = found.count - 1
            }
            guard let index, let address = current.pointee.ifa_addr else { continue }
            let family = Int32(address.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            let length = socklen_t(family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
            if var endpoint = Endpoint(reading: UnsafeRawPointer(address), length: length) {
                endpoint.port = 0
                found[index].addresses.append(endpoint)
            }
        }
        return HostInterfaces(found)
    }

    /// The UP interfaces that carry one of `addresses` (ports ignored). A wildcard takes every
    /// UP interface with an address of its family (`::` both, being dual-stack), loopback
    /// included; an IPv6 link-local address does not count there (media never comes from one,
    /// and on a node every container's veth has one).
    func carrying(_ addresses: [Endpoint]) -> [String] {
        all.filter { interface in
            interface.isUp && addresses.contains { wanted in
                interface.addresses.contains { own in
                    guard wanted.isWildcard else { return own.high == wanted.high && own.low == wanted.low }
                    return !own.isLinkLocalIPv6 && (own.isIPv4 || !wanted.isIPv4)
                }
            }
        }.map(\.name)
    }
}

private extension Endpoint {
    /// fe80::/10.
    var isLinkLocalIPv6: Bool { !isIPv4 && high >> 54 == 0x3FA }
}
