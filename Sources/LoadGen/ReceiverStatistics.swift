import ClientSockets
/// Everything the receiving side learns from arriving datagrams, for a fixed set of streams.
///
/// Arrays are sized once in `init`; `record` does arithmetic only, so the receive loop stays
/// free of heap allocation. Owned by the receiving thread until the run ends.
public struct ReceiverStatistics: Sendable {
    public private(set) var windows: [SequenceWindow]
    private var lastTransit: [Int64]
    private var jitterNs: [Double]
    public private(set) var latency = LatencyHistogram()
    /// Datagrams received, duplicates included.
    public private(set) var received: UInt64 = 0
    public private(set) var bytes: UInt64 = 0
    /// Datagrams that arrived on a TURN client's TCP or TLS connection, duplicates included:
    /// a stream carries no datagram's marks, so they count for nothing about ECN and DSCP.
    public private(set) var unmarked: UInt64 = 0
    public private(set) var ecnKept: UInt64 = 0
    public private(set) var dscpKept: UInt64 = 0
    /// Datagrams received with each TOS byte (index): the marks as they arrived, whatever was sent.
    public private(set) var tosCounts = [UInt64](repeating: 0, count: 256)
    /// Datagrams that were not ours (bad magic, unknown stream).
    public private(set) var foreign: UInt64 = 0
    /// Late latching datagrams: expected, never measured.
    public private(set) var latching: UInt64 = 0
    /// Datagrams sent before this CLOCK_MONOTONIC time do not enter the latency histogram
    /// (the warm-up); they still count for loss, order, ECN and DSCP.
    public var latencyFrom: UInt64

    public init(streams: Int, latencyFrom: UInt64 = 0) {
        windows = [SequenceWindow](repeating: SequenceWindow(), count: streams)
        lastTransit = [Int64](repeating: .min, count: streams)
        jitterNs = [Double](repeating: 0, count: streams)
        self.latencyFrom = latencyFrom
    }

    /// Counts a datagram that carried no header of ours.
    public mutating func recordForeign() { foreign += 1 }

    /// Datagrams whose marks were seen: those the ECN and DSCP figures are about.
    public var marked: UInt64 { received - unmarked }

    /// Records one datagram carrying `header`, received at `now` with TOS byte `tos`, or with
    /// no marks to see (`marksSeen` false: it came on a stream).
    @inline(__always)
    public mutating func record(_ header: PayloadHeader, length: Int, tos: UInt8, marksSeen: Bool = true, now: UInt64) {
        let s = Int(header.stream)
        guard header.sequence != PayloadHeader.latchSequence else {
            latching += 1
            return
        }
        guard s < windows.count else {
            foreign += 1
            return
        }
        received += 1
        bytes += UInt64(length)
        if marksSeen {
            tosCounts[Int(tos)] += 1
            if tos & 3 == header.tos & 3 { ecnKept += 1 }
            if tos >> 2 == header.tos >> 2 { dscpKept += 1 }
        } else {
            unmarked += 1
        }
        if windows[s].record(header.sequence) == .duplicate { return }
        // RFC 3550 section 6.4.1: J += (|D| - J) / 16 with D the change in transit time. The clocks
        // are the same, so transit is the one-way delay itself.
        let transit = Int64(bitPattern: now &- header.sendTime)
        if lastTransit[s] != .min {
            let d = Double((transit - lastTransit[s]).magnitude)
            jitterNs[s] += (d - jitterNs[s]) / 16
        }
        lastTransit[s] = transit
        if header.sendTime >= latencyFrom, now >= header.sendTime {
            latency.record(now - header.sendTime)
        }
    }

    public var unique: UInt64 { windows.reduce(0) { $0 + $1.unique } }
    public var reordered: UInt64 { windows.reduce(0) { $0 + $1.reordered } }
    public var duplicated: UInt64 { windows.reduce(0) { $0 + $1.duplicated } }

    /// Mean over streams that received at least two datagrams of each stream's RFC 3550 jitter, in ns.
    public var meanJitterNs: Double {
        var total = 0.0, n = 0
        for i in jitterNs.indices where lastTransit[i] != .min {
            total += jitterNs[i]
            n += 1
        }
        return n == 0 ? 0 : total / Double(n)
    }
}
