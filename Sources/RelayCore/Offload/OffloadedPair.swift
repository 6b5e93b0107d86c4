import FastPath
import NetAddress

/// A flow the kernel carries both ways: the key of what arrives from one side (`forward`) and
/// of what arrives from the other (`backward`), and the turn its entries were last written, so
/// housekeeping writes them again only when user space saw the flow since (the kernel handed
/// it back: idle past its timeout, or a datagram it does not carry).
struct OffloadedPair: Equatable {
    var forward: FlowKey
    var backward: FlowKey
    var written: UInt64
    /// The idle timeout the entries were written with (a reload may change a rule's).
    var idleTimeout: UInt64?
    /// The credit last granted to each direction's entry, for a direction with a rate limit
    /// (nil: forwarded without credit). What it has left is read back before the next grant,
    /// and the difference charged to the limit's bucket.
    var forwardCredit: Int64?
    var backwardCredit: Int64?

    var isCredited: Bool { forwardCredit != nil || backwardCredit != nil }

    /// Whether `other` names the same flows (a rewrite of the same entries, not new ones).
    func sameKeys(_ other: OffloadedPair) -> Bool { forward == other.forward && backward == other.backward }

    /// When the kernel last carried a datagram of either direction (0: never, or no entry).
    func lastForwarded(_ offload: any FlowOffload) -> UInt64 {
        max(offload.lastForwarded(forward) ?? 0, offload.lastForwarded(backward) ?? 0)
    }

    /// Takes both entries out and returns what the kernel counted for each.
    func remove(from offload: any FlowOffload) -> (forward: FlowCounters?, backward: FlowCounters?) {
        let counts = (offload.counters(forward), offload.counters(backward))
        offload.remove(forward)
        offload.remove(backward)
        return counts
    }
}

extension FlowOffload {
    /// Settles the credit of `key`'s entry, which was granted `granted`: takes back what is
    /// left, and returns what the kernel spent (to charge to the limit's bucket).
    func takeBackCredit(_ key: FlowKey, granted: Int64) -> UInt64 {
        let left = exchangeCredit(key, 0) ?? granted
        return UInt64(max(0, granted - max(0, left)))
    }
}

extension FlowCounters {
    /// Datagrams by the codepoint they arrived with and the one they left with, as a 4 x 4
    /// table by codepoint value (received << 2 | sent): the kernel never marks, so a datagram
    /// left as it came or, under `ecn: clear`, Not-ECT.
    func ecnPairs(copied: Bool) -> [(received: Int, sent: Int, count: UInt64)] {
        (0..<4).map { received in (received, copied ? received : 0, ecnIn[received]) }
    }
}
