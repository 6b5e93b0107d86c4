import Glibc
import SystemSupport

/// Forwarding turned on for `lo`, so that the program's route lookups get an answer: the
/// kernel answers a BPF route lookup only when forwarding is on for the device the lookup
/// starts from, and the program starts every lookup from `lo`, as the kernel does for a
/// datagram this host sends. Forwarding on `lo` forwards nothing by itself: what `lo`
/// receives is this host's own, and forwarding between the other interfaces stays as set
/// (IPv4 decides by the receiving interface, IPv6 by `all`). The setting belongs to the
/// calling thread's network namespace and stays after the process ends.
enum LoopbackForwarding {
    private static let settings = ["/proc/sys/net/ipv4/conf/lo/forwarding", "/proc/sys/net/ipv6/conf/lo/forwarding"]

    static func enable() throws(FastPathError) {
        for path in settings where access(path, F_OK) == 0 && !isOn(path) {
            let descriptor = open(path, O_WRONLY | O_CLOEXEC)
            let written = descriptor >= 0 ? write(descriptor, "1\n", 2) : -1
            let code = errno
            if descriptor >= 0 { close(descriptor) }
            guard written == 2 else {
                throw FastPathError("fast path: route lookups need forwarding on lo and \(path) could not be set to 1 "
                                    + "(\(SystemCallError.explain(code))): set it with sysctl before starting")
            }
        }
    }

    private static func isOn(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var byte: UInt8 = 0
        return read(descriptor, &byte, 1) == 1 && byte != UInt8(ascii: "0")
    }
}
