/// Entries a worker's table writes per datagram (session legs, forward-rule clients'
/// counters), in memory this store owns.
///
/// Why not an array: a datagram writes its leg's counters and last-heard time and each other
/// leg's counters, four to eight writes, and a write into an array's element first checks that
/// the array's buffer is not shared (swift_isUniquelyReferenced, a runtime call the optimizer
/// cannot drop across the engine call between the writes). Here an entry is read and written in
/// place. Growing moves the entries to a larger block; it happens when an entry is added, on
/// the control path, never per datagram.
///
/// Contract: only the owning worker's thread touches it; an index must be below `count`
/// (checked: an index comes from an owner tag, and a wrong one is a bug).
final class EntryStore<Element> {
    private(set) var count = 0
    private var capacity: Int
    private var base: UnsafeMutablePointer<Element>

    init(capacity: Int = 64) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    subscript(index: Int) -> Element {
        unsafeAddress {
            precondition(index >= 0 && index < count, "entry index out of range")
            return UnsafePointer(base + index)
        }
        unsafeMutableAddress {
            precondition(index >= 0 && index < count, "entry index out of range")
            return base + index
        }
    }

    func append(_ entry: Element) {
        if count == capacity {
            let grown = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: base, count: count)
            base.deallocate()
            base = grown
            capacity *= 2
        }
        (base + count).initialize(to: entry)
        count += 1
    }
}
