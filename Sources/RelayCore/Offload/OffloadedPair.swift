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

extension FlowCounters {
    /// Datagrams by the codepoint they arrived with and the one they left with, as a 4 x 4
    /// table by codepoint value (received << 2 | sent): the kernel never marks, so a datagram
    /// left as it came or, under `ecn: clear`, Not-ECT.
    func ecnPairs(copied: Bool) -> [(received: Int, sent: Int, count: UInt64)] {
        (0..<4).map { received in (received, copied ? received : 0, ecnIn[received]) }
    }
}
