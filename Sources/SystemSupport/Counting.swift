/// Counters kept as plain integers by one thread and added up across threads for totals.
/// A type lists its summed fields once; `add` is the one merge every such type uses.
public protocol SummedCounters {
    /// The fields that add when two sets of counters are combined.
    static var summedFields: [WritableKeyPath<Self, UInt64>] { get }
}

extension SummedCounters {
    /// Adds `other`'s summed fields to these (wrapping, as the counters themselves do).
    public mutating func add(_ other: Self) {
        for field in Self.summedFields { self[keyPath: field] &+= other[keyPath: field] }
    }
}

extension InlineArray where Element == UInt64 {
    /// Adds a table of counts element by element: how fixed count tables combine.
    @inlinable
    public mutating func add(_ other: Self) {
        for index in indices { self[index] &+= other[index] }
    }
}
