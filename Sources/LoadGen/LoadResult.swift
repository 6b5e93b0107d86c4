import JSONSyntax
import RelayObservation
import STUN
import TurnClientKit
/// The outcome of one load run: what the generator saw, and what the relay said it spent.
public struct LoadResult: Sendable {
    public var profile = TrafficProfile.constant
    public var streams = 0
    public var bidirectional = false
    /// Offered datagrams/s over all streams and directions.
    public var offeredRate = 0.0
    /// Measured seconds (sending time).
    public var seconds = 0.0
    public var warmupSeconds = 0.0
    public var tos: UInt8 = 0
    public var latchedStreams = 0
    public var sent: UInt64 = 0
    /// Distinct datagrams received (duplicates excluded).
    public var received: UInt64 = 0
    public var reordered: UInt64 = 0
    public var duplicated: UInt64 = 0
    public var foreign: UInt64 = 0
    public var pacerSkipped: UInt64 = 0
    /// Latency quantiles in microseconds: p50, p90, p99, p99.9, max.
    public var latencyUs: [Double] = [0, 0, 0, 0, 0]
    public var jitterUs = 0.0
    /// Fractions of received datagrams whose ECN / DSCP arrived as sent (of those whose marks
    /// could be seen: not those that arrived on a TURN client's TCP or TLS connection).
    public var ecnKept = 0.0
    public var dscpKept = 0.0
    /// The TOS bytes datagrams arrived with and how many of each, most frequent first.
    public var tosSeen: [(tos: UInt8, count: UInt64)] = []
    public var generatorCPUSeconds = 0.0
    public var relay: RelayDelta?
    /// The relay's CPU over the same interval from /proc/PID/stat, when its pid is known.
    public var relayProcCPUSeconds: Double?
    /// TURN mode: the server the clients allocated on.
    public var turnServer: String?
    /// TURN mode: refresh rounds during the run, and those in which some client failed.
    public var turnRefreshes = 0
    public var turnFailedRefreshes = 0
    /// The senders' reaction to CE and losses (`--congestion-control`).
    public var congestionControl = CongestionControl.none
    /// With a congestion control: the mean rate the senders chose, all streams together.
    public var controlledRate: Double?
    /// The share of received datagrams that arrived CE.
    public var ceFraction = 0.0
    /// TURN mode: clients a 300 Try Alternate sent to another server (each followed once).
    public var turnRedirected = 0
    /// TURN mode: how the clients reached the server.
    public var turnTransport = TurnTransport.udp
    /// TURN mode: the echo peer the data went to and came back from (`--turn-peer`).
    public var turnEchoPeer: String?
    /// TURN mode: whether every client had a peer address of its own, counted up from
    /// `turnEchoPeer` (`--turn-peers each`).
    public var turnPeers = TurnPeers.shared
    /// TURN mode: whether the data went as Send indications rather than ChannelData.
    public var turnSendIndications = false
    /// TURN over TCP or TLS: clients whose connection failed during the run, and the first reason.
    public var turnFailedClients = 0
    public var turnFailure: String?
    /// Datagrams received whose marks could not be seen (on a TURN client's stream).
    public var receivedWithoutMarks: UInt64 = 0

    public init() {}

    public var lost: UInt64 { sent > received ? sent - received : 0 }
    public var deliveredFraction: Double { sent == 0 ? 0 : Double(received) / Double(sent) }

    /// The /proc CPU per datagram the relay took in, in ns: per packets_in when the relay's
    /// stats are read, otherwise (a relay without /v1/stats, such as coturn) per datagram
    /// the generator sent it, both directions counted, and with an echo peer each echo too
    /// (it crossed the relay once more). Nil without --relay-pid.
    public var relayProcCPUNsPerDatagram: Double? {
        guard let proc = relayProcCPUSeconds else { return nil }
        let datagrams = relay?.packetsIn ?? Double(sent + (turnEchoPeer == nil ? 0 : received))
        return datagrams > 0 ? proc * 1e9 / datagrams : .nan
    }

    /// Fills the receiver-side figures from the statistics of a finished run.
    public mutating func take(_ s: ReceiverStatistics) {
        received = s.unique
        reordered = s.reordered
        duplicated = s.duplicated
        foreign = s.foreign
        let h = s.latency
        latencyUs = [0.5, 0.9, 0.99, 0.999, 1.0].map { Double(h.quantile($0)) / 1000 }
        jitterUs = s.meanJitterNs / 1000
        receivedWithoutMarks = s.unmarked
        let marked = Double(s.marked)
        ecnKept = marked == 0 ? 0 : Double(s.ecnKept) / marked
        dscpKept = marked == 0 ? 0 : Double(s.dscpKept) / marked
        ceFraction = marked == 0 ? 0 : Double(s.tosCounts.indices.filter { $0 & 3 == 3 }.reduce(0) { $0 + s.tosCounts[$1] }) / marked
        tosSeen = s.tosCounts.indices.filter { s.tosCounts[$0] > 0 }
            .map { (UInt8($0), s.tosCounts[$0]) }.sorted { $0.count > $1.count }
    }

    /// The result as one JSON object (the last stdout line with --json).
    public var json: JSONValue {
        func n(_ d: Double?) -> JSONValue { d.map { .number($0) } ?? .null }
        func i(_ v: UInt64) -> JSONValue { .integer(Int64(clamping: v)) }
        return .object([
            ("profile", .string(profile.rawValue)),
            ("streams", .integer(Int64(streams))),
            ("bidirectional", .bool(bidirectional)),
            ("offered_rate", .number(offeredRate)),
            ("seconds", .number(seconds)),
            ("warmup_seconds", .number(warmupSeconds)),
            ("tos", .integer(Int64(tos))),
            ("latched_streams", .integer(Int64(latchedStreams))),
            ("sent", i(sent)),
            ("received", i(received)),
            ("lost", i(lost)),
            ("delivered", .number(deliveredFraction)),
            ("reordered", i(reordered)),
            ("duplicated", i(duplicated)),
            ("foreign", i(foreign)),
            ("pacer_skipped", i(pacerSkipped)),
            ("latency_us", .object(zip(["p50", "p90", "p99", "p999", "max"], latencyUs).map { ($0.0, .number($0.1)) })),
            ("jitter_us", .number(jitterUs)),
            ("ecn_kept", .number(ecnKept)),
            ("dscp_kept", .number(dscpKept)),
            ("ce_fraction", .number(ceFraction)),
            ("congestion_control", .string(congestionControl.rawValue)),
            ("controlled_rate", n(controlledRate)),
            ("tos_seen", .object(tosSeen.map { (String($0.tos), i($0.count)) })),
            ("generator_cpu_seconds", .number(generatorCPUSeconds)),
            ("relay_engine", relay.map { .string($0.engine) } ?? .null),
            ("relay_packets_in", n(relay?.packetsIn)),
            ("relay_packets_out", n(relay?.packetsOut)),
            ("relay_cpu_seconds", n(relay?.cpuSeconds)),
            ("relay_proc_cpu_seconds", n(relayProcCPUSeconds)),
            ("relay_proc_cpu_ns_per_packet", n(relayProcCPUNsPerDatagram)),
            ("turn", turnServer.map { .string($0) } ?? .null),
            ("turn_refreshes", .integer(Int64(turnRefreshes))),
            ("turn_failed_refreshes", .integer(Int64(turnFailedRefreshes))),
            ("turn_redirected", .integer(Int64(turnRedirected))),
            ("relay_cpu_ns_per_packet", n(relay?.cpuNsPerPacket)),
            ("turn_transport", turnServer == nil ? .null : .string(turnTransport.name)),
            ("turn_peer", turnEchoPeer.map { .string($0) } ?? .null),
            ("turn_peers", turnServer == nil ? .null : .string(turnPeers.rawValue)),
            ("turn_send_indications", .bool(turnSendIndications)),
            ("turn_failed_clients", .integer(Int64(turnFailedClients))),
            ("turn_failure", turnFailure.map { .string($0) } ?? .null),
            ("received_without_marks", i(receivedWithoutMarks)),
            ("relay_syscalls_per_packet", n(relay?.syscallsPerPacket)),
        ])
    }
}
