/// When each TURN allocation next needs the housekeeping's attention (its own end, or the end
/// of one of its permissions or channels), in a binary min-heap, so a housekeeping turn visits
/// only the allocations with something due instead of walking all of them.
///
/// Contract: entries are never updated in place. A deadline that moves later leaves its entry
/// behind; the owner drops such an entry when it comes due (its allocation is gone, or holds
/// another deadline), and visiting an allocation early only finds nothing to do. So an entry
/// is pushed only when a deadline comes earlier than the one queued, and the heap holds about
/// one entry per allocation. Control path only (requests and housekeeping).
struct ExpiryQueue {
    struct Entry {
        var deadline: UInt64
        var allocation: Int32
    }

    private(set) var entries: [Entry] = []

    var count: Int { entries.count }

    mutating func push(_ deadline: UInt64, allocation: Int32) {
        entries.append(Entry(deadline: deadline, allocation: allocation))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// The earliest entry whose deadline is `now` or before, taken out; nil when none is due.
    mutating func popDue(now: UInt64) -> Entry? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        guard !entries.isEmpty else { return first }
        entries[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { break }
            let right = left + 1
            let smaller = right < entries.count && entries[right].deadline < entries[left].deadline ? right : left
            guard entries[smaller].deadline < entries[parent].deadline else { break }
            entries.swapAt(parent, smaller)
            parent = smaller
        }
        return first
    }
}
