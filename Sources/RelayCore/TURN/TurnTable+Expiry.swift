import DatagramEngine

/// Timers, checked by the owner's housekeeping against `now`: allocations past their lifetime
/// close, permissions and channels past theirs are forgotten, unclaimed port reservations
/// return to the pool.
extension TurnTable {
    func expire() {
        for a in allocations.indices {
            guard allocations[a].live else { continue }
            let allocation = allocations[a]
            if allocation.expires <= now {
                removeAllocation(a)
                counters.allocationsExpired &+= 1
                continue
            }
            if allocation.permissions.values.contains(where: { $0 <= now }) {
                allocations[a].permissions = allocation.permissions.filter { $0.value > now }
            }
            allocations[a].channels.removeExpired(now: now)
        }
        closePending()
        for port in shared.expireReservations(now: now) { ports.release(port, from: .turn) }
    }

    /// Closes every allocation (the worker is stopping).
    func shutDown() {
        for a in allocations.indices where allocations[a].live { removeAllocation(a) }
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
            if allocations[index].live {
                permissions += allocations[index].permissions.count
                channels += allocations[index].channels.count
            }
            index += 1
        }
        return (permissions, channels)
    }
}
