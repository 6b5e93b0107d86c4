import Glibc

/// Whether this host has IPv6 loopback (some containers and VMs run with IPv6 disabled).
///
/// Asked of the kernel with a plain socket(2) and bind(2) to [::1]:0, never through a socket
/// type under test: a defect in the relay's, the engine's or the load generator's IPv6 code
/// must fail the IPv6 tests, not make them skip.
public enum IPv6Loopback {
    /// nil when a UDP socket can bind [::1]:0; otherwise which call failed and why.
    public static let unavailableReason: String? = {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return "socket(AF_INET6): \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        return bound == 0 ? nil : "bind([::1]:0): \(String(cString: strerror(errno)))"
    }()

    public static var isAvailable: Bool { unavailableReason == nil }

    /// Returns when ::1 is there; otherwise skips, or fails under `make test` (HostRequirement).
    public static func require() throws {
        try HostRequirement.require(isAvailable, "this host has no IPv6 loopback (\(unavailableReason ?? "")), so the IPv6 case did not run")
    }
}
