import Glibc
import NetAddress

/// The concrete addresses a kernel entry names. The kernel matches and rewrites exact 5-tuples,
/// so a socket bound to a wildcard address needs the address a datagram actually reached (or
/// leaves from): what IP_PKTINFO reported, or what the routing table picks.
enum OffloadAddress {
    /// The relay's address a datagram to a socket bound on `bound` reached: `reached` (from
    /// IP_PKTINFO, all zero on a socket bound to one address) or else the bound address, with
    /// `port`. Nil when neither names an address.
    static func local(bound: Endpoint, reached: Endpoint, port: UInt16) -> Endpoint? {
        var address = reached.isWildcard ? bound : reached
        guard !address.isWildcard else { return nil }
        address.port = port
        return address
    }

    /// The source address the routing table picks for datagrams to `destination` (a UDP
    /// socket connected there and asked its name; nothing is sent), or nil when there is no
    /// route. For a socket bound to a wildcard address, which sends from exactly that.
    static func routeSource(toward destination: Endpoint) -> Endpoint? {
        let family = destination.isIPv4 ? AF_INET : AF_INET6
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { Glibc.close(descriptor) }
        var storage = sockaddr_storage()
        let length = destination.write(to: &storage, family: family)
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, length) }
        }
        guard connected == 0 else { return nil }
        var name = sockaddr_storage()
        var nameLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &name) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &nameLength) }
        }
        guard named == 0 else { return nil }
        return withUnsafePointer(to: &name) { Endpoint(reading: UnsafeRawPointer($0), length: nameLength) }
    }
}
