/// A log-linear histogram of nanosecond values with a fixed bucket array (HDR-like).
///
/// Values below 256 have their own bucket; above, each power of two is split into 128 equal
/// buckets, so a bucket is at most 1/128 of its lower bound wide and reporting the bucket's
/// midpoint is within 1/256 (0.4%) of any value in it. Recording is a few shifts and one
/// increment: no allocation after `init`.
public struct LatencyHistogram: Sendable {
    private static let linear = 256
    private static let subBuckets = 128
    private static let bucketCount = linear + 56 * subBuckets

    private var counts: [UInt64]
    public private(set) var count: UInt64 = 0
    public private(set) var max: UInt64 = 0
    public private(set) var min: UInt64 = .max
    public private(set) var sum: UInt64 = 0

    public init() { counts = [UInt64](repeating: 0, count: Self.bucketCount) }

    @inline(__always)
    static func index(of value: UInt64) -> Int {
        if value < UInt64(linear) { return Int(value) }
        let msb = 63 - value.leadingZeroBitCount  // >= 8
        let shift = msb - 7
        let mantissa = Int(value >> UInt64(shift))  // 128...255
        return linear + (shift - 1) * subBuckets + (mantissa - subBuckets)
    }

    /// The midpoint of bucket `index`.
    static func value(at index: Int) -> UInt64 {
        if index < linear { return UInt64(index) }
        let shift = (index - linear) / subBuckets + 1
        let mantissa = UInt64((index - linear) % subBuckets + subBuckets)
        let lower = mantissa << UInt64(shift)
        return lower + (UInt64(1) << UInt64(shift)) / 2
    }

    @inline(__always)
    public mutating func record(_ value: UInt64) {
        counts[Self.index(of: value)] += 1
        count += 1
        sum &+= value
        if value > max { max = value }
        if value < min { min = value }
    }

    /// Empties the histogram without reallocating its buckets.
    public mutating func reset() {
        for i in counts.indices { counts[i] = 0 }
        count = 0
        sum = 0
        max = 0
        min = .max
    }

    /// Adds another histogram's counts (to combine per-thread or per-stream histograms).
    public mutating func merge(_ other: LatencyHistogram) {
        for i in counts.indices { counts[i] += other.counts[i] }
        count += other.count
        sum &+= other.sum
        max = Swift.max(max, other.max)
        min = Swift.min(min, other.min)
    }

    /// The value at quantile `q` (0...1), within 0.4%; 0 when empty. The top quantile reports
    /// the exact maximum rather than a bucket midpoint.
    public func quantile(_ q: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let rank = Swift.max(1, UInt64((q * Double(count)).rounded(.up)))
        if rank >= count { return max }
        var seen: UInt64 = 0
        for (i, c) in counts.enumerated() where c > 0 {
            seen += c
            if seen >= rank { return Swift.min(Swift.max(Self.value(at: i), min), max) }
        }
        return max
    }
}
