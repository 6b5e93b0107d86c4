import JSONSyntax
import StatsKeys

/// The relay's counters that say how it batches (GET /v1/stats, the top level): receive calls
/// that returned datagrams, worker turns that received, datagrams per turn by bucket, and UDP
/// GSO sends with the segments they carried. Read beside the CPU figures so a report can say
/// why an engine saves what it saves. A relay that does not report them (an older build) has
/// none; the C reference forwarder has none either.
public struct BatchCounters: Sendable, Equatable {
    public var receiveCalls: Double
    public var receiveTurns: Double
    /// Turns by datagrams received, in the buckets of `bucketBounds` (the last takes the rest).
    public var turnSizes: [Double]
    public var gsoSegments: Double
    public var gsoSends: Double

    /// Inclusive upper bounds of `turnSizes`' buckets, as the relay names them.
    public static let bucketBounds = [1, 2, 4, 8, 16, 32, 64, 128]

    public init(receiveCalls: Double, receiveTurns: Double, turnSizes: [Double], gsoSegments: Double, gsoSends: Double) {
        self.receiveCalls = receiveCalls
        self.receiveTurns = receiveTurns
        self.turnSizes = turnSizes
        self.gsoSegments = gsoSegments
        self.gsoSends = gsoSends
    }

    /// From /v1/stats' object; nil when a key is missing.
    init?(_ object: JSONValue) {
        guard let calls = object[StatsKey.receiveBatches]?.double, let turns = object[StatsKey.receiveTurns]?.double,
              let histogram = object[StatsKey.turnSizeHistogram], let segments = object[StatsKey.gsoSegments]?.double,
              let sends = object[StatsKey.gsoSends]?.double else { return nil }
        var sizes: [Double] = []
        for name in Self.bucketBounds.map(String.init) + ["+Inf"] {
            guard let count = histogram[name]?.double else { return nil }
            sizes.append(count)
        }
        self.init(receiveCalls: calls, receiveTurns: turns, turnSizes: sizes, gsoSegments: segments, gsoSends: sends)
    }

    /// What happened between `before` and `self`.
    public func since(_ before: BatchCounters) -> BatchCounters {
        BatchCounters(receiveCalls: receiveCalls - before.receiveCalls, receiveTurns: receiveTurns - before.receiveTurns,
                      turnSizes: zip(turnSizes, before.turnSizes).map { $0 - $1 },
                      gsoSegments: gsoSegments - before.gsoSegments, gsoSends: gsoSends - before.gsoSends)
    }
}
