/// Median, minimum and maximum of a handful of repeated measurements.
public struct Summary: Sendable, Equatable {
    public let median: Double
    public let min: Double
    public let max: Double

    /// Nil for an empty list. The median of an even count is the mean of the middle two.
    public init?(_ values: [Double]) {
        let sorted = values.filter { !$0.isNaN }.sorted()
        guard let first = sorted.first, let last = sorted.last else { return nil }
        let mid = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
        min = first
        max = last
    }
}
