import Glibc
import NetAddress
import SystemSupport

/// This host's network interfaces as getifaddrs(3) sees them in the process's namespace: each
/// name once, whether it is UP, and its IPv4 and IPv6 addresses (port 0). Start-up only: it
/// allocates. The fast path picks the interfaces to attach to from it.
struct HostInterfaces {
    struct Interface: Equatable {
        let name: String
        var isUp: Bool
        var addresses: [Endpoint]
    }

    /// In the order getifaddrs lists them.
    let all: [Interface]

    init(_ all: [Interface]) { self.all = all }

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

    /// The UP interfaces that carry one of `addresses` (ports ignored); with a wildcard among
    /// them, every UP interface that has an address at all, loopback included.
    func carrying(_ addresses: [Endpoint]) -> [String] {
        let wildcard = addresses.contains { $0.isWildcard }
        return all.filter { interface in
            guard interface.isUp, !interface.addresses.isEmpty else { return false }
            if wildcard { return true }
            return interface.addresses.contains { own in addresses.contains { $0.sameHost(as: own) } }
        }.map(\.name)
    }
}

private extension Endpoint {
    /// The same address whatever the port; an IPv6 scope is not part of it (a link-local
    /// address given without one still names this interface's).
    func sameHost(as other: Endpoint) -> Bool { high == other.high && low == other.low }
}
