import Glibc

/// Consecutive UDP ports for one test's relay, that no other test on this host uses at the same
/// time, whichever worktree or process runs it. Fixed ranges in tests collided when two test
/// runs went side by side (a relay skips a port another process holds, but a test counting on
/// a port, such as an EVEN-PORT pair, could still lose it).
///
/// Blocks lie below the kernel's ephemeral range, so no port-0 bind lands in one; each block is
/// claimed with an flock(2) on a file in /tmp, held until the block is released (or the process
/// dies), and taken only when every port in it can be bound on 127.0.0.1 and ::1 right now.
public final class PortBlock {
    /// The claimed ports: `count` of them from the block's start (plus `offset`).
    public let range: ClosedRange<UInt16>
    private let locks: [Int32]

    static let slotSize = 200
    static let firstPort = 10_000
    static let directory = "/tmp/mediarelay-test-ports"

    /// `count` ports starting `offset` ports into a free block (an odd offset gives a range
    /// with an odd first port). More than 200 take several consecutive blocks, each claimed.
    public init(count: Int = 100, offset: Int = 0) throws {
        precondition(count > 0 && offset >= 0 && count + offset <= 4 * PortBlock.slotSize)
        mkdir(PortBlock.directory, 0o777)
        let needed = (count + offset + PortBlock.slotSize - 1) / PortBlock.slotSize
        let slots = (PortBlock.ephemeralLow() - PortBlock.firstPort) / PortBlock.slotSize - (needed - 1)
        let start = Int.random(in: 0..<max(slots, 1))
        for step in 0..<max(slots, 0) {
            let first = (start + step) % slots
            var held: [Int32] = []
            for slot in first..<(first + needed) {
                let fd = open("\(PortBlock.directory)/\(PortBlock.firstPort + slot * PortBlock.slotSize).lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
                guard fd >= 0 else { break }
                guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                    close(fd)
                    break
                }
                held.append(fd)
            }
            let base = PortBlock.firstPort + first * PortBlock.slotSize
            let ports = UInt16(base + offset)...UInt16(base + offset + count - 1)
            if held.count == needed && ports.allSatisfy(PortBlock.isFree) {
                range = ports
                locks = held
                return
            }
            for fd in held { close(fd) }
        }
        throw PortBlockError.noFreeBlock
    }

    deinit { for fd in locks { close(fd) } }  // releases the flocks

    /// `LOW-HIGH`, as `--ports` takes it.
    public var argument: String { "\(range.lowerBound)-\(range.upperBound)" }

    /// The first port of the kernel's ephemeral range (net.ipv4.ip_local_port_range).
    static func ephemeralLow() -> Int {
        guard let file = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r") else { return 32_768 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 64)
        guard fgets(&line, Int32(line.count), file) != nil else { return 32_768 }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) } ?? 32_768
    }

    /// Whether a UDP socket can bind `port` on IPv4 and IPv6 loopback now.
    static func isFree(_ port: UInt16) -> Bool {
        canBind(AF_INET, port) && canBind(AF_INET6, port)
    }

    private static func canBind(_ family: Int32, _ port: UInt16) -> Bool {
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if family == AF_INET6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr.__in6_u.__u6_addr8.15 = 1  // ::1
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            } == 0
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// Why no port or block of ports could be had for a test.
public enum PortBlockError: Error {
    /// Every block is claimed by another test or holds a bound port.
    case noFreeBlock
    /// No port of this kind (`FreePort`) could be bound.
    case noFreePort(String)
}
