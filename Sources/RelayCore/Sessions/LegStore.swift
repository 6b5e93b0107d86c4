/// The legs of one worker's sessions (`SessionTable.LegState`), in memory this store owns.
///
/// Why not an array: a datagram writes its leg's counters and last-heard time and each other
/// leg's counters, four to eight writes, and a write into an array's element first checks that
/// the array's buffer is not shared (swift_isUniquelyReferenced, a runtime call the optimizer
/// cannot drop across the engine call between the writes). Here a leg is read and written in
/// place. Growing moves the legs to a larger block; it happens when a session is created, on
/// the control path, never per datagram.
///
/// Contract: only the owning worker's thread touches it; an index must be below `count`
/// (checked: an index comes from an owner tag, and a wrong one is a bug).
final class LegStore {
    private(set) var count = 0
    private var capacity: Int
    private var base: UnsafeMutablePointer<SessionTable.LegState>

    init(capacity: Int = 64) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    subscript(index: Int) -> SessionTable.LegState {
        unsafeAddress {
            precondition(index >= 0 && index < count, "leg index out of range")
            return UnsafePointer(base + index)
        }
        unsafeMutableAddress {
            precondition(index >= 0 && index < count, "leg index out of range")
            return base + index
        }
    }

    func append(_ leg: SessionTable.LegState) {
        if count == capacity {
            let grown = UnsafeMutablePointer<SessionTable.LegState>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: base, count: count)
            base.deallocate()
            base = grown
            capacity *= 2
        }
        (base + count).initialize(to: leg)
        count += 1
    }
}
