import Synchronization

/// Which ports of the pool are TURN relayed addresses now, readable by every worker without a
/// lock: the peer policy asks it (per Send indication, too) whether an own address and port is
/// another allocation's relayed address, which may live on another worker.
public final class RelayedPorts: Sendable {
    /// Never reassigned, and every access is atomic: safe to share.
    private nonisolated(unsafe) let words: UnsafeMutablePointer<Atomic<UInt64>>
    private let count = 1024  // 65,536 ports, one bit each

    public init() {
        words = .allocate(capacity: count)
        for index in 0..<count { (words + index).initialize(to: Atomic(0)) }
    }

    deinit {
        _ = words.deinitialize(count: count)
        words.deallocate()
    }

    func insert(_ port: UInt16) {
        words[Int(port >> 6)].bitwiseOr(UInt64(1) << (port & 63), ordering: .releasing)
    }

    func remove(_ port: UInt16) {
        words[Int(port >> 6)].bitwiseAnd(~(UInt64(1) << (port & 63)), ordering: .releasing)
    }

    @inline(__always)
    public func contains(_ port: UInt16) -> Bool {
        words[Int(port >> 6)].load(ordering: .acquiring) & (UInt64(1) << (port & 63)) != 0
    }
}
