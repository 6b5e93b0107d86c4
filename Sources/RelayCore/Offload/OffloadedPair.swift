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
    /// The same in datagrams, for a direction with a packet limit (nil: none).
    var forwardPackets: Int64?
    var backwardPackets: Int64?

    var isCredited: Bool { forwardCredit != nil || backwardCredit != nil || forwardPackets != nil || backwardPackets != nil }

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

/// What a round found of a pair's credit: what each direction spent since its grant, and
/// what each had left (taken back).
struct CreditSettlement {
    var forwardSpent: UInt64 = 0
    var backwardSpent: UInt64 = 0
    var forwardLeft: UInt64 = 0
    var backwardLeft: UInt64 = 0
    /// Datagrams of packet credit each direction had left.
    var forwardPacketsLeft: UInt64 = 0
    var backwardPacketsLeft: UInt64 = 0

    var left: UInt64 { forwardLeft &+ backwardLeft }
}

extension OffloadedPair {
    /// Takes back what is left of each credited direction's credit (the kernel forwards on
    /// credit nothing more until the next grant) and says what each spent and had left.
    mutating func settleCredit(_ offload: any FlowOffload) -> CreditSettlement {
        var settled = CreditSettlement()
        if let granted = forwardCredit {
            (settled.forwardSpent, settled.forwardLeft) = offload.settle(forward, granted: granted)
            forwardCredit = 0
        }
        if let granted = backwardCredit {
            (settled.backwardSpent, settled.backwardLeft) = offload.settle(backward, granted: granted)
            backwardCredit = 0
        }
        if let granted = forwardPackets {
            settled.forwardPacketsLeft = offload.settlePackets(forward, granted: granted)
            forwardPackets = 0
        }
        if let granted = backwardPackets {
            settled.backwardPacketsLeft = offload.settlePackets(backward, granted: granted)
            backwardPackets = 0
        }
        return settled
    }

    /// How many of its directions are forwarded on credit.
    var creditedDirections: Int {
        (forwardCredit == nil && forwardPackets == nil ? 0 : 1) + (backwardCredit == nil && backwardPackets == nil ? 0 : 1)
    }
}

extension FlowOffload {
    /// Takes back what is left of the credit of `key`'s entry, which was granted `granted`:
    /// what the kernel spent of it and what was left (an entry gone counts as all spent).
    func settle(_ key: FlowKey, granted: Int64) -> (spent: UInt64, left: UInt64) {
        let left = UInt64(max(0, min(granted, exchangeCredit(key, 0) ?? 0)))
        return (UInt64(max(0, granted)) &- left, left)
    }

    /// Takes back what is left of `key`'s packet credit, granted `granted`; returns it.
    func settlePackets(_ key: FlowKey, granted: Int64) -> UInt64 {
        UInt64(max(0, min(granted, exchangePacketCredit(key, 0) ?? 0)))
    }

    /// Grants `key`'s entry `packets` of packet credit and returns them as granted.
    func grantPackets(_ key: FlowKey, _ packets: UInt64) -> Int64 {
        let credit = Int64(min(packets, UInt64(Int64.max)))
        _ = exchangePacketCredit(key, credit)
        return credit
    }

    /// Grants `key`'s entry `bytes` of credit and returns them as granted.
    func grant(_ key: FlowKey, _ bytes: UInt64) -> Int64 {
        let credit = Int64(min(bytes, UInt64(Int64.max)))
        _ = exchangeCredit(key, credit)
        return credit
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
