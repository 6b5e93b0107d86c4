import FastPath

/// Credit for the session pairs the kernel forwards on credit (a leg with a limit; every leg
/// under the egress cap): each direction is granted what its leg's limits would pass unmarked
/// (`Policer.credit`: bytes, at most the egress cap's share, and datagrams), and the grant is set aside in
/// the limit's bucket at once (`Policer.reserve`), so that a datagram the kernel hands back
/// meets the bucket net of what the kernel may still send; each round gives back what the
/// kernel left (`Policer.release`). Past its credit the kernel hands the datagrams back and the
/// user-space policers mark and drop them as they always have.
extension SessionTable {
    /// Whether `leg`'s arrivals are forwarded on byte credit in the kernel.
    func isCredited(_ leg: Int) -> Bool { legs[leg].limits.bytes.isLimited || egress.isOn }

    /// How many directions are forwarded on credit.
    var creditedDirections: Int {
        creditedPairs.reduce(0) { $0 + (offloaded[$1]?.creditedDirections ?? 0) }
    }

    /// Takes back every credited direction's credit, gives what was left back to the legs'
    /// byte limits, and returns it in all (the egress cap's to take back).
    func settleCredit() -> UInt64 {
        var left: UInt64 = 0
        for first in creditedPairs {
            guard var pair = offloaded[first] else { continue }
            left &+= settle(&pair, group: Int(first))
            offloaded[first] = pair
        }
        return left
    }

    /// Grants every credited direction what its leg's byte limit allows now, at most
    /// `egressShare` (nil: no egress cap); returns the total granted.
    func grantCredit(egressShare: UInt64?) -> UInt64 {
        var granted: UInt64 = 0
        for first in creditedPairs { granted &+= grantCredit(group: Int(first), egressShare: egressShare) }
        return granted
    }

    @discardableResult
    func grantCredit(group first: Int, egressShare: UInt64?) -> UInt64 {
        guard let offload, var pair = offloaded[Int32(first)] else { return 0 }
        var granted: UInt64 = 0
        if pair.forwardCredit != nil {
            pair.forwardCredit = grant(offload, pair.forward, leg: first, egressShare)
            granted &+= UInt64(pair.forwardCredit!)
        }
        if pair.backwardCredit != nil {
            pair.backwardCredit = grant(offload, pair.backward, leg: first + 1, egressShare)
            granted &+= UInt64(pair.backwardCredit!)
        }
        if pair.forwardPackets != nil { pair.forwardPackets = grantPackets(offload, pair.forward, leg: first) }
        if pair.backwardPackets != nil { pair.backwardPackets = grantPackets(offload, pair.backward, leg: first + 1) }
        offloaded[Int32(first)] = pair
        return granted
    }

    /// Settles `pair` (of the group whose first leg is `first`): gives what each direction left
    /// back to its leg's byte limit; returns what was left in all.
    func settle(_ pair: inout OffloadedPair, group first: Int) -> UInt64 {
        guard let offload else { return 0 }
        let settled = pair.settleCredit(offload)
        if legs[first].limits.bytes.isLimited { legs[first].limits.bytes.release(settled.forwardLeft, now: now) }
        if legs[first + 1].limits.bytes.isLimited { legs[first + 1].limits.bytes.release(settled.backwardLeft, now: now) }
        if legs[first].limits.packets.isLimited { legs[first].limits.packets.release(settled.forwardPacketsLeft, now: now) }
        if legs[first + 1].limits.packets.isLimited { legs[first + 1].limits.packets.release(settled.backwardPacketsLeft, now: now) }
        return settled.left
    }

    /// Grants `key` what `leg`'s arrivals may be forwarded on now (its byte limit's credit, at
    /// most the egress cap's share), set aside in the limit's bucket.
    private func grant(_ offload: any FlowOffload, _ key: FlowKey, leg: Int, _ egressShare: UInt64?) -> Int64 {
        var credit = egressShare ?? .max
        if legs[leg].limits.bytes.isLimited {
            credit = min(credit, legs[leg].limits.bytes.credit(now: now, marks: legs[leg].ecnMarking, thresholds: thresholds))
            legs[leg].limits.bytes.reserve(credit, now: now)
        }
        return offload.grant(key, credit)
    }

    /// Grants `key` the datagrams `leg`'s packet limit would pass unmarked now, set aside in it.
    private func grantPackets(_ offload: any FlowOffload, _ key: FlowKey, leg: Int) -> Int64 {
        let credit = legs[leg].limits.packets.credit(now: now, marks: legs[leg].ecnMarking, thresholds: thresholds)
        legs[leg].limits.packets.reserve(credit, now: now)
        return offload.grantPackets(key, credit)
    }
}
