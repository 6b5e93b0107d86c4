import FastPath

/// Credit for the TURN channels the kernel forwards on credit (an allocation with a bandwidth
/// quota; every allocation under the egress cap): each round the worker settles what the
/// kernel spent, charging it to the allocation's quota (both directions and every channel
/// share it), and grants each entry an equal part of what the quota would pass unmarked
/// (`Policer.credit`), at most the egress cap's share. Past that the kernel hands the
/// datagrams back and the user-space policers mark and drop them as they always have.
extension TurnTable {
    /// How many entries are forwarded on credit.
    var creditedDirections: Int {
        creditedAllocations.reduce(0) { total, allocation in
            total + (offloadedChannels[allocation]?.values.reduce(0) { $0 + $1.pair.creditedDirections } ?? 0)
        }
    }

    /// Takes back every credited entry's credit, charges what was spent to the quotas, and
    /// returns what was left in all (the egress cap's to take back).
    func settleCredit() -> UInt64 {
        var left: UInt64 = 0
        for allocation in creditedAllocations { left &+= settleCredit(allocation) }
        return left
    }

    /// Grants every credited entry its part of its allocation's quota, at most `egressShare`
    /// (nil: no egress cap); returns the total granted.
    func grantCredit(egressShare: UInt64?) -> UInt64 {
        var granted: UInt64 = 0
        for allocation in creditedAllocations { granted &+= grantCredit(allocation, egressShare: egressShare) }
        return granted
    }

    @discardableResult
    func settleCredit(_ allocation: Int) -> UInt64 {
        guard var channels = offloadedChannels[allocation] else { return 0 }
        var left: UInt64 = 0
        for (number, var channel) in channels {
            left &+= settle(&channel.pair, allocation)
            channels[number] = channel
        }
        offloadedChannels[allocation] = channels
        return left
    }

    @discardableResult
    func grantCredit(_ allocation: Int, egressShare: UInt64?) -> UInt64 {
        guard let offload, var channels = offloadedChannels[allocation], !channels.isEmpty else { return 0 }
        var each = egressShare ?? .max
        if store[allocation].bandwidth.isLimited {
            let credit = store[allocation].bandwidth.credit(now: clock.now, marks: store[allocation].ecnMarking,
                                                            thresholds: settings.ecnThresholds)
            each = min(each, credit / UInt64(2 * channels.count))
        }
        var granted: UInt64 = 0
        for (number, var channel) in channels {
            channel.pair.forwardCredit = offload.grant(channel.pair.forward, each)
            channel.pair.backwardCredit = offload.grant(channel.pair.backward, each)
            granted &+= 2 &* UInt64(channel.pair.forwardCredit!)
            channels[number] = channel
        }
        offloadedChannels[allocation] = channels
        return granted
    }

    /// Settles one channel's entries: charges what they spent to the quota; returns what was left.
    func settle(_ pair: inout OffloadedPair, _ allocation: Int) -> UInt64 {
        guard let offload else { return 0 }
        let settled = pair.settleCredit(offload)
        if store[allocation].bandwidth.isLimited {
            store[allocation].bandwidth.charge(settled.forward &+ settled.backward, now: clock.now)
        }
        return settled.left
    }
}
