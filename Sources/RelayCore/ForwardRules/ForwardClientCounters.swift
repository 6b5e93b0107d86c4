/// What one forward-rule client's datagrams did, both ways: plain integers its worker writes
/// on the packet path and reads once, when the client ends (its accounting record).
struct ForwardClientCounters {
    var packetsFromClient: UInt64 = 0
    var bytesFromClient: UInt64 = 0
    var packetsToClient: UInt64 = 0
    var bytesToClient: UInt64 = 0
    /// ECN codepoints by value: from the client as received and towards the upstream as sent,
    /// from the upstream as received and towards the client as sent.
    var ecnFromClient = InlineArray<4, UInt64>(repeating: 0)
    var ecnToUpstream = InlineArray<4, UInt64>(repeating: 0)
    var ecnFromUpstream = InlineArray<4, UInt64>(repeating: 0)
    var ecnToClient = InlineArray<4, UInt64>(repeating: 0)
    /// Datagrams the relay marked CE (backlog, egress cap), either way.
    var ceMarked: UInt64 = 0
    var drops = DropCounts()
}

/// The counters of every forward-rule client of one worker, by client index, in memory this
/// store owns: a datagram writes its client's counters in place, with no array uniqueness
/// check (see `LegStore` for why). Grows on the control path when a client is added.
///
/// Contract: only the owning worker's thread touches it; `reset(_:)` an index before its first
/// use and whenever a new client takes it.
final class ForwardClientCounterStore {
    private var capacity: Int
    private var base: UnsafeMutablePointer<ForwardClientCounters>

    init(capacity: Int = 64) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
        base.initialize(repeating: ForwardClientCounters(), count: capacity)
    }

    deinit {
        base.deinitialize(count: capacity)
        base.deallocate()
    }

    subscript(index: Int) -> ForwardClientCounters {
        unsafeAddress {
            precondition(index >= 0 && index < capacity, "client index out of range")
            return UnsafePointer(base + index)
        }
        unsafeMutableAddress {
            precondition(index >= 0 && index < capacity, "client index out of range")
            return base + index
        }
    }

    /// Fresh counters at `index`, growing the store to reach it.
    func reset(_ index: Int) {
        if index >= capacity {
            var grown = capacity * 2
            while grown <= index { grown *= 2 }
            let moved = UnsafeMutablePointer<ForwardClientCounters>.allocate(capacity: grown)
            moved.moveInitialize(from: base, count: capacity)
            (moved + capacity).initialize(repeating: ForwardClientCounters(), count: grown - capacity)
            base.deallocate()
            base = moved
            capacity = grown
        }
        base[index] = ForwardClientCounters()
    }
}
