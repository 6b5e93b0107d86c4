import DatagramEngine

/// Memory for datagrams TURN writes itself (ChannelData headers and Data indications in front
/// of a peer's payload, control answers, TLS plaintext held past its record): taken in slices
/// that stay valid until `reset`, which the TURN table calls after the engine's flush.
/// Allocated once per worker, shared by the parts of its TURN table that write.
final class OutgoingArena<Engine: TableEngine> {
    private let memory: UnsafeMutableRawBufferPointer
    private var used = 0
    /// Flushed when the arena is full: what it sent no longer needs its bytes.
    private let engine: Engine

    init(capacity: Int, engine: Engine) {
        memory = .allocate(byteCount: capacity, alignment: 16)
        self.engine = engine
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

    /// Space for one outgoing datagram; when the arena is full the engine is flushed first.
    /// nil only for a datagram larger than the whole arena.
    @inline(__always)
    func room(_ count: Int) -> UnsafeMutableRawBufferPointer? {
        if let slice = take(count) { return slice }
        engine.flush()
        reset()
        return take(count)
    }

    var capacity: Int { memory.count }

    func reset() { used = 0 }
}
