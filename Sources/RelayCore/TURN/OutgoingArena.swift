/// Memory for datagrams the TURN table writes itself (ChannelData headers and Data
/// indications in front of a peer's payload, control answers): taken in slices that stay valid
/// until `reset`, which the table calls after the engine's flush. Allocated once per worker.
final class OutgoingArena {
    private let memory: UnsafeMutableRawBufferPointer
    private var used = 0

    init(capacity: Int) {
        memory = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { memory.deallocate() }

    /// `count` bytes, or nil when the arena is full (flush, reset, then ask again).
    @inline(__always)
    func take(_ count: Int) -> UnsafeMutableRawBufferPointer? {
        guard used + count <= memory.count else { return nil }
        let slice = UnsafeMutableRawBufferPointer(rebasing: memory[used..<(used + count)])
        used += (count + 15) & ~15
        return slice
    }

    var capacity: Int { memory.count }

    func reset() { used = 0 }
}
