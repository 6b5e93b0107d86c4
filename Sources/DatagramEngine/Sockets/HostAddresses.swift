import Glibc
import NetAddress
import SystemSupport

extension Endpoint {
    /// Every IPv4 and IPv6 address of this host's interfaces (getifaddrs), port 0; IPv6 ones
    /// keep their scope. Start-up only: it allocates. The TURN peer policy needs them to know
    /// which peer addresses reach this host when the relay's sockets bind a wildcard.
    public static func hostAddresses() throws(SystemCallError) -> [Endpoint] {
        var list: UnsafeMutablePointer<ifaddrs>?
        _ = try SystemCall.require("getifaddrs") { Int(getifaddrs(&list)) }
        defer { freeifaddrs(list) }
        var addresses: [Endpoint] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ifa_addr {
                let length = socklen_t(address.pointee.sa_family == sa_family_t(AF_INET6)
                    ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
                if var endpoint = Endpoint(reading: UnsafeRawPointer(address), length: length) {
                    endpoint.port = 0
                    addresses.append(endpoint)
                }
            }
            entry = current.pointee.ifa_next
        }
        return addresses
    }
}
