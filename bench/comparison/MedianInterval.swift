import LoadGen

/// The median of paired repeats and how far it can be trusted: the interval between two order
/// statistics that holds the true median with at least `confidence`, whatever the noise's
/// distribution (the sign test's interval). Its width is the median's spread. With n repeats
/// the interval is the k-th smallest to the k-th largest, k the largest for which
/// 1 - 2 P(Binomial(n, 1/2) < k) reaches the confidence; with too few repeats for any k to reach
/// it (fewer than five at 0.9), it is the whole range and `coverage` says how much it holds.
public struct MedianInterval: Sendable, Equatable {
    public static let confidence = 0.9

    public let count: Int
    public let median: Double
    public let low: Double
    public let high: Double
    /// The probability that the interval holds the true median.
    public let coverage: Double

    /// Nil for no values (NaN ones are left out).
    public init?(_ values: [Double]) {
        let sorted = values.filter { !$0.isNaN }.sorted()
        guard let summary = Summary(sorted) else { return nil }
        let n = sorted.count
        let k = Self.rank(count: n)
        count = n
        median = summary.median
        low = sorted[k - 1]
        high = sorted[n - k]
        coverage = Self.coverage(count: n, rank: k)
    }

    /// The median's spread: the interval's width.
    public var spread: Double { high - low }

    /// The largest k (1-based, at most the middle) whose interval reaches `confidence`; 1 when
    /// none does.
    static func rank(count n: Int) -> Int {
        var k = 1
        while k + 1 <= (n + 1) / 2 && coverage(count: n, rank: k + 1) >= confidence { k += 1 }
        return k
    }

    /// P(k-th smallest <= true median <= k-th largest) for n independent draws.
    static func coverage(count n: Int, rank k: Int) -> Double {
        // P(Binomial(n, 1/2) <= k - 1), summed term by term (n is a few dozen at most).
        var term = 1.0, tail = 0.0
        for i in 0..<k {
            if i > 0 { term *= Double(n - i + 1) / Double(i) }
            tail += term
        }
        return max(0, 1 - 2 * tail / Double(sign: .plus, exponent: n, significand: 1))
    }
}
