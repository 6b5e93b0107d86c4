/// The random source of one worker's probabilistic CE marks: xorshift64* (Vigna, 2016), a few
/// integer operations per draw, no lock and no syscall. Seeded once from the system generator;
/// marks need no more than an even spread, never unpredictability.
struct MarkingRandom {
    private var state: UInt64

    init() {
        var system = SystemRandomNumberGenerator()
        state = system.next() | 1
    }

    init(seed: UInt64) { state = seed | 1 }

    /// The next 32 random bits (the high half of the product, the better mixed one).
    @inline(__always)
    mutating func next() -> UInt32 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return UInt32(truncatingIfNeeded: (state &* 0x2545_F491_4F6C_DD1D) >> 32)
    }
}
