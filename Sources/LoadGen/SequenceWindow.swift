/// Per-stream arrival bookkeeping over a bounded window of sequence numbers.
///
/// A datagram above the highest sequence seen so far moves the window; one below it is
/// counted as reordered (RFC 4737's "arrived after a higher number"), or as a duplicate when
/// its bit is already set. Sequences older than `windowSize` below the highest cannot be
/// checked for duplication any more and count as reordered (a bound, not a guess: memory
/// stays fixed however long the run).
public struct SequenceWindow: Sendable {
    public static let windowSize: UInt64 = 4096
    private static let words = Int(windowSize / 64)

    private var bits: [UInt64]
    private var highest: UInt64 = 0
    private var started = false
    /// Distinct sequence numbers received (duplicates excluded).
    public private(set) var unique: UInt64 = 0
    public private(set) var reordered: UInt64 = 0
    public private(set) var duplicated: UInt64 = 0
    /// Highest sequence number seen plus one; the sender's count is the better denominator.
    public var expected: UInt64 { started ? highest + 1 : 0 }

    public init() { bits = [UInt64](repeating: 0, count: Self.words) }

    /// What one arrival turned out to be.
    public enum Arrival: Equatable, Sendable { case inOrder, reordered, duplicate, tooOld }

    @discardableResult
    public mutating func record(_ sequence: UInt64) -> Arrival {
        if !started || sequence > highest {
            if started {
                let advance = sequence - highest
                if advance >= Self.windowSize {
                    for i in bits.indices { bits[i] = 0 }
                } else {
                    // Clear the slots the window slides over: they belong to numbers never seen.
                    var s = highest + 1
                    while s < sequence { clear(s); s += 1 }
                }
            }
            started = true
            highest = sequence
            set(sequence)
            unique += 1
            return .inOrder
        }
        if highest - sequence >= Self.windowSize {
            reordered += 1
            unique += 1
            return .tooOld
        }
        if isSet(sequence) {
            duplicated += 1
            return .duplicate
        }
        set(sequence)
        reordered += 1
        unique += 1
        return .reordered
    }

    @inline(__always) private func slot(_ s: UInt64) -> (Int, UInt64) {
        let bit = s % Self.windowSize
        return (Int(bit / 64), 1 << (bit % 64))
    }
    @inline(__always) private mutating func set(_ s: UInt64) { let (w, m) = slot(s); bits[w] |= m }
    @inline(__always) private mutating func clear(_ s: UInt64) { let (w, m) = slot(s); bits[w] &= ~m }
    @inline(__always) private func isSet(_ s: UInt64) -> Bool { let (w, m) = slot(s); return bits[w] & m != 0 }
}
