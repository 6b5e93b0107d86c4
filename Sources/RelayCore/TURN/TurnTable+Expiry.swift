import DatagramEngine

/// Timers, checked by the owner's housekeeping against `now`: allocations past their lifetime
/// close, permissions and channels past theirs are forgotten, unclaimed port reservations
/// return to the pool.
extension TurnTable {
    /// Visits the allocations with something due (`expiries`), not all of them: with 2,000
    /// clients a housekeeping turn costs what has ended, not a walk over every allocation.
    func expire() {
        while let due = expiries.popDue(now: now) {
            let a = Int(due.allocation)
            // An entry left behind by a later deadline, or by an allocation that is gone.
            guard allocations[a].live, allocations[a].scheduled == due.deadline else { continue }
            allocations[a].scheduled = 0
            if allocations[a].expires <= now {
                removeAllocation(a, .expired)
                counters.allocationsExpired &+= 1
                continue
            }
            let permissions = allocations[a].permissions
            if permissions.values.contains(where: { $0 <= now }) {
                allocations[a].permissions = permissions.filter { $0.value > now }
                permissionCount -= permissions.count - allocations[a].permissions.count
            }
            channelCount -= allocations[a].channels.removeExpired(now: now)
            schedule(a, nextDeadline(a))
        }
        closePending()
        for port in shared.expireReservations(now: now) { ports.release(port, from: .turn) }
    }

    /// Queues allocation `a` for `deadline` unless it is queued for an earlier one already
    /// (a later deadline is found when the earlier one comes: see `ExpiryQueue`).
    func schedule(_ a: Int, _ deadline: UInt64) {
        let queued = allocations[a].scheduled
        guard queued == 0 || deadline < queued else { return }
        allocations[a].scheduled = deadline
        expiries.push(deadline, allocation: Int32(a))
    }

    /// The allocation's next end: its own, a permission's or a channel's.
    func nextDeadline(_ a: Int) -> UInt64 {
        var next = min(allocations[a].expires, allocations[a].channels.earliestExpiry)
        for expires in allocations[a].permissions.values where expires < next { next = expires }
        return next
    }

    /// Closes every allocation (the worker is stopping).
    func shutDown() {
        // Connections first: their entries gone, removing their allocations queues no close.
        closeAllConnections()
        connectionsToClose.removeAll()
        for a in allocations.indices where allocations[a].live { removeAllocation(a, .shutdown) }
        closePending()
    }

    var stats: TurnStats {
        var stats = TurnStats()
        stats.counters = counters
        stats.allocations = activeAllocations
        stats.permissions = permissionCount
        stats.channels = channelCount
        stats.transports = transportCounters
        stats.openConnections = openConnections
        return stats
    }

    var activeAllocations: Int { byClient.count }
    var activePermissions: Int { permissionCount }
    var activeChannels: Int { channelCount }
}
