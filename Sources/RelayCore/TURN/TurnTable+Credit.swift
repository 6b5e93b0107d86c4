import FastPath

/// Credit for the TURN channels the kernel forwards on credit (an allocation with a bandwidth
/// quota; every allocation under the egress cap). One quota serves both directions of every
/// channel, so each round its credit (what it would pass unmarked, `Policer.credit`) is shared
/// out among the entries by what each spent in the last round (with traffic one way, nearly all
/// goes to that way), each at most the egress cap's share, and set aside in the quota at once
/// (`Policer.reserve`): a datagram the kernel hands back meets the quota net of what the kernel
/// may still send. The next round gives back what the entries left (`Policer.release`). Past its
/// credit the kernel hands the datagrams back and the user-space policers mark and drop them as
/// they always have.
extension TurnTable {
    /// How many entries are forwarded on credit.
    var creditedDirections: Int {
        creditedAllocations.reduce(0) { total, allocation in
            total + (offloadedChannels[allocation]?.values.reduce(0) { $0 + $1.pair.creditedDirections } ?? 0)
        }
    }

    /// Takes back every credited entry's credit, gives what was left back to the quotas, and
    /// returns it in all (the egress cap's to take back).
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
        guard let offload, var channels = offloadedChannels[allocation] else { return 0 }
        var left: UInt64 = 0
        for (number, var channel) in channels {
            let settled = channel.pair.settleCredit(offload)
            channel.forwardSpent = settled.forwardSpent
            channel.backwardSpent = settled.backwardSpent
            left &+= settled.left
            channels[number] = channel
        }
        offloadedChannels[allocation] = channels
        if store[allocation].bandwidth.isLimited { store[allocation].bandwidth.release(left, now: clock.now) }
        return left
    }

    @discardableResult
    func grantCredit(_ allocation: Int, egressShare: UInt64?) -> UInt64 {
        guard let offload, var channels = offloadedChannels[allocation], !channels.isEmpty else { return 0 }
        let cap = egressShare ?? .max
        guard store[allocation].bandwidth.isLimited else {
            for (number, var channel) in channels {
                channel.pair.forwardCredit = offload.grant(channel.pair.forward, cap)
                channel.pair.backwardCredit = offload.grant(channel.pair.backward, cap)
                channels[number] = channel
            }
            offloadedChannels[allocation] = channels
            return cap == .max ? 0 : 2 &* UInt64(channels.count) &* cap
        }
        let quota = store[allocation].bandwidth.credit(now: clock.now, marks: store[allocation].ecnMarking,
                                                       thresholds: settings.ecnThresholds)
        // Each entry's weight is what it spent last round, plus a floor so that a way that was
        // quiet can start again: a sixteenth of an even share.
        let floor = max(1, quota / UInt64(32 * channels.count))
        var total: UInt64 = 0
        for channel in channels.values { total &+= channel.forwardSpent &+ channel.backwardSpent &+ 2 &* floor }
        var granted: UInt64 = 0
        for (number, var channel) in channels {
            let forward = min(cap, Self.part(quota, weight: channel.forwardSpent &+ floor, of: total))
            let backward = min(cap, Self.part(quota, weight: channel.backwardSpent &+ floor, of: total))
            channel.pair.forwardCredit = offload.grant(channel.pair.forward, forward)
            channel.pair.backwardCredit = offload.grant(channel.pair.backward, backward)
            granted &+= forward &+ backward
            channels[number] = channel
        }
        offloadedChannels[allocation] = channels
        store[allocation].bandwidth.reserve(granted, now: clock.now)
        return granted
    }

    /// `weight` / `total` of `amount`, in 128 bits, rounded down.
    private static func part(_ amount: UInt64, weight: UInt64, of total: UInt64) -> UInt64 {
        guard total > 0 else { return 0 }
        let (high, low) = amount.multipliedFullWidth(by: weight)
        return total.dividingFullWidth((high, low)).quotient
    }

    /// Settles one channel's entries: gives what they left back to the quota; returns it.
    func settle(_ pair: inout OffloadedPair, _ allocation: Int) -> UInt64 {
        guard let offload else { return 0 }
        let left = pair.settleCredit(offload).left
        if store[allocation].bandwidth.isLimited { store[allocation].bandwidth.release(left, now: clock.now) }
        return left
    }
}
