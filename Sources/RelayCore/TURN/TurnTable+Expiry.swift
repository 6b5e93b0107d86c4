import DatagramEngine

/// Timers, checked by the owner's housekeeping against `now`: allocations past their lifetime
/// close, permissions and channels past theirs are forgotten, unclaimed port reservations
/// return to the pool.
extension TurnTable {
    func expire() {
        for a in allocations.indices {
            guard let allocation = allocations[a] else { continue }
            if allocation.expires <= now {
                removeAllocation(a)
                counters.allocationsExpired &+= 1
                continue
            }
            if allocation.permissions.values.contains(where: { $0 <= now }) {
                allocations[a]!.permissions = allocation.permissions.filter { $0.value > now }
            }
            for (number, binding) in allocation.channels where binding.expires <= now {
                allocations[a]!.channels[number] = nil
                allocations[a]!.channelByPeer[binding.peer] = nil
            }
        }
        closePending()
        for port in shared.expireReservations(now: now) { ports.release(port, from: .turn) }
    }

    /// Closes every allocation (the worker is stopping).
    func shutDown() {
        for a in allocations.indices where allocations[a] != nil { removeAllocation(a) }
        closePending()
    }

    var stats: TurnStats {
        var stats = TurnStats()
        stats.counters = counters
        stats.allocations = activeAllocations
        (stats.permissions, stats.channels) = activePermissionsAndChannels
        return stats
    }

    var activeAllocations: Int { byClient.count }
    var activePermissions: Int { activePermissionsAndChannels.permissions }
    var activeChannels: Int { activePermissionsAndChannels.channels }

    /// One index loop: reduce's closure allocates in debug builds, and stats are taken ten
    /// times a second inside the worker's loop.
    var activePermissionsAndChannels: (permissions: Int, channels: Int) {
        var permissions = 0
        var channels = 0
        var index = 0
        while index < allocations.count {
            if let allocation = allocations[index] {
                permissions += allocation.permissions.count
                channels += allocation.channels.count
            }
            index += 1
        }
        return (permissions, channels)
    }
}
