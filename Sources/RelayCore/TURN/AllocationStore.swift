import DatagramEngine
import NetAddress

/// The allocations of one worker's TURN server (RFC 8656 section 2.2), by index: each one's
/// client, relayed sockets, permissions, channels and lifetime; the index of each client's
/// allocation; when each next needs housekeeping; the permissions and channels in force.
/// Values only: it opens and closes nothing, and what an allocation's end sets off (its
/// sockets, its record, its connection) is for the `TurnTable` that removes it.
///
/// Contract: an index names one allocation from `insert` until `remove`, then is given out
/// again; the owner tag of the allocation's relayed sockets carries it, so a datagram from a
/// peer reaches its allocation without a lookup. Only the worker's thread touches it.
final class AllocationStore {
    // Read and written per datagram by the worker's thread only, and no access to one of them
    // overlaps another to the same: the dynamic exclusivity checks buy nothing here.
    // Not optionals: reaching into an optional element copied the whole allocation (its
    // dictionaries retained and released) per datagram. A free index holds `.vacant`. In an
    // `EntryStore`, so the packet path writes an allocation's counters in place.
    private let entries = EntryStore<Allocation>()
    private var freeIndices: [Int32] = []
    @exclusivity(unchecked) private var byClient: [TurnClient: Int32] = [:]
    /// The last client a datagram came from and its allocation: a client sending a burst (a
    /// video frame is several datagrams) costs one hash for the burst. Forgotten when that
    /// allocation goes; the key includes the listener, so one entry serves every listener.
    @exclusivity(unchecked) private var lastClient = TurnClient.nobody
    @exclusivity(unchecked) private var lastIndex: Int32 = -1
    /// When allocations next need housekeeping, so it visits only those (`nextEnded`).
    private var expiries = ExpiryQueue()
    /// Permissions and channels in force, kept as they change: the stats published ten times
    /// a second read these instead of walking every allocation.
    private(set) var permissionCount = 0
    private(set) var channelCount = 0

    /// The allocation at `index`; the packet path counts into it in place.
    subscript(index: Int) -> Allocation {
        @inline(__always) unsafeAddress { UnsafePointer(entries.address(index)) }
        @inline(__always) unsafeMutableAddress { entries.address(index) }
    }

    /// Allocations in force.
    var count: Int { byClient.count }

    /// Indices given out so far, in force or free.
    var indexCount: Int { entries.count }

    /// Entries in the queue of deadlines (one per allocation, about).
    var scheduledCount: Int { expiries.count }

    /// The allocation of the client a datagram came from: the last one again, or by hash.
    @inline(__always)
    func indexCachingLast(of client: TurnClient) -> Int? {
        if lastIndex >= 0 && lastClient == client { return Int(lastIndex) }
        guard let index = byClient[client] else { return nil }
        lastClient = client
        lastIndex = index
        return Int(index)
    }

    /// The allocation of `client`, for the control path (the last-client entry stays).
    func index(of client: TurnClient) -> Int? {
        byClient[client].map(Int.init)
    }

    /// The index the next `insert` fills: its relayed sockets are tagged with it first.
    func reserveIndex() -> Int32 {
        freeIndices.popLast() ?? Int32(entries.count)
    }

    /// Puts `allocation` at `index` (from `reserveIndex`) and queues its lifetime's end.
    func insert(_ allocation: Allocation, at index: Int32) {
        if Int(index) < entries.count { entries[Int(index)] = allocation } else { entries.append(allocation) }
        byClient[allocation.client] = index
        schedule(Int(index), allocation.expires)
    }

    /// Forgets the allocation at `index` and returns it (nil when none lives there), with its
    /// permissions and channels; its index is free for the next.
    func remove(_ index: Int) -> Allocation? {
        guard entries[index].live else { return nil }
        let allocation = entries[index]
        permissionCount -= allocation.permissions.count
        channelCount -= allocation.channels.count
        byClient[allocation.client] = nil
        if lastIndex == Int32(index) { lastIndex = -1 }
        entries[index] = .vacant
        freeIndices.append(Int32(index))
        return allocation
    }

    /// Installs or refreshes the permission for `peer`'s address until `expires`, and its copy
    /// in every channel to that address (which the packet path reads instead of the permission).
    func permit(_ index: Int, _ peer: Endpoint, until expires: UInt64) {
        let key = Allocation.permissionKey(peer)
        if entries[index].permissions.updateValue(expires, forKey: key) == nil { permissionCount += 1 }
        entries[index].channels.renewPermission(key, until: expires)
        schedule(index, expires)
    }

    /// Binds or refreshes channel `number` to `peer` until `expires`; its permission's expiry
    /// is copied in by the `permit` that follows.
    func bindChannel(_ index: Int, _ number: UInt16, to peer: Endpoint, until expires: UInt64) {
        if entries[index].channels.bind(number, peer: peer, expires: expires, permissionExpires: 0) { channelCount += 1 }
    }

    /// Queues allocation `index` for `deadline` unless it is queued for an earlier one already
    /// (a later deadline is found when the earlier one comes: see `ExpiryQueue`).
    func schedule(_ index: Int, _ deadline: UInt64) {
        let queued = entries[index].scheduled
        guard queued == 0 || deadline < queued else { return }
        entries[index].scheduled = deadline
        expiries.push(deadline, allocation: Int32(index))
    }

    /// Housekeeping up to `now`: permissions and channels past their time are forgotten along
    /// the way, and the next allocation past its lifetime is returned for its owner to remove;
    /// nil when none is. Visits the allocations with something due, not all of them.
    func nextEnded(now: UInt64) -> Int? {
        while let due = expiries.popDue(now: now) {
            let index = Int(due.allocation)
            // An entry left behind by a later deadline, or by an allocation that is gone.
            guard entries[index].live, entries[index].scheduled == due.deadline else { continue }
            entries[index].scheduled = 0
            if entries[index].expires <= now { return index }
            let permissions = entries[index].permissions
            if permissions.values.contains(where: { $0 <= now }) {
                entries[index].permissions = permissions.filter { $0.value > now }
                permissionCount -= permissions.count - entries[index].permissions.count
            }
            channelCount -= entries[index].channels.removeExpired(now: now)
            schedule(index, nextDeadline(index))
        }
        return nil
    }

    /// The allocation's next end: its own, a permission's or a channel's.
    private func nextDeadline(_ index: Int) -> UInt64 {
        var next = min(entries[index].expires, entries[index].channels.earliestExpiry)
        for expires in entries[index].permissions.values where expires < next { next = expires }
        return next
    }

    /// The indices of every allocation in force.
    var liveIndices: [Int] { (0..<entries.count).filter { entries[$0].live } }

    /// Up to `limit` allocations, oldest first (GET /v1/turn/allocations), with the counters
    /// `counters` gives for an index (what the kernel fast path carried added), else their own.
    func describe(limit: Int, worker: Int, now: UInt64, counters: ((Int) -> AllocationCounters)? = nil) -> [TurnAllocationInfo] {
        let live = liveIndices.sorted { entries[$0].created < entries[$1].created }.prefix(limit)
        return live.map { index in
            let allocation = entries[index]
            return TurnAllocationInfo(
                worker: worker, username: allocation.username, client: allocation.client.address,
                relayed: [allocation.relay4, allocation.relay6].compactMap { $0?.advertised },
                ageSeconds: Double(now &- allocation.created) / 1e9,
                expiresInSeconds: Double(allocation.expires > now ? allocation.expires - now : 0) / 1e9,
                permissions: allocation.permissions.filter { $0.value > now }.keys.sorted { $0.description < $1.description },
                channels: allocation.channels.entries.filter { $0.expires > now }.map { ($0.number, $0.peer) }.sorted { $0.number < $1.number },
                counters: counters?(index) ?? allocation.counters)
        }
    }
}
