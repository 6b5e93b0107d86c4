import DatagramEngine
import NetAddress
import Synchronization

/// Which ports of the pool are TURN relayed addresses now, per address family, readable by
/// every worker without a lock: the peer policy asks it (per Send indication, too) whether an
/// own address and port is another allocation's relayed address, which may live on another
/// worker. The family matters: with IPv4 and IPv6 relayed addresses, port P relayed on IPv4
/// says nothing of [::1]:P, which may be any other socket.
public final class RelayedPorts: Sendable {
    /// Never reassigned, and every access is atomic: safe to share.
    private nonisolated(unsafe) let words: UnsafeMutablePointer<Atomic<UInt64>>
    private static let wordsPerFamily = 1024  // 65,536 ports, one bit each
    private let count = 2 * RelayedPorts.wordsPerFamily  // IPv4's words, then IPv6's

    public init() {
        words = .allocate(capacity: count)
        for index in 0..<count { (words + index).initialize(to: Atomic(0)) }
    }

    deinit {
        _ = words.deinitialize(count: count)
        words.deallocate()
    }

    func insert(_ port: UInt16, ipv6: Bool) {
        words[RelayedPorts.word(port, ipv6)].bitwiseOr(UInt64(1) << (port & 63), ordering: .releasing)
    }

    func remove(_ port: UInt16, ipv6: Bool) {
        words[RelayedPorts.word(port, ipv6)].bitwiseAnd(~(UInt64(1) << (port & 63)), ordering: .releasing)
    }

    @inline(__always)
    public func contains(_ port: UInt16, ipv6: Bool) -> Bool {
        words[RelayedPorts.word(port, ipv6)].load(ordering: .acquiring) & (UInt64(1) << (port & 63)) != 0
    }

    /// Whether a relayed socket of `endpoint`'s family is bound on its port.
    @inline(__always)
    public func contains(_ endpoint: Endpoint) -> Bool { contains(endpoint.port, ipv6: !endpoint.isIPv4) }

    @inline(__always)
    private static func word(_ port: UInt16, _ ipv6: Bool) -> Int {
        Int(port >> 6) + (ipv6 ? wordsPerFamily : 0)
    }
}
