/// The free places of the counters map. A slot freed goes to the back of the line and is
/// handed out again last: a datagram the kernel was forwarding for a removed entry at that
/// moment still adds to its old slot, and a slot not reused at once cannot pass that count on
/// to a new entry.
struct SlotPool {
    private var slots: [UInt32]
    private var head = 0
    private(set) var free: Int

    init(capacity: Int) {
        slots = (0..<UInt32(capacity)).map { $0 }
        free = capacity
    }

    mutating func take() -> UInt32? {
        guard free > 0 else { return nil }
        let slot = slots[head]
        head = (head + 1) % slots.count
        free -= 1
        return slot
    }

    mutating func give(_ slot: UInt32) {
        precondition(free < slots.count, "a counter slot given back twice")
        slots[(head + free) % slots.count] = slot
        free += 1
    }
}
