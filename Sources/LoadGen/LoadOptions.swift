import BenchSupport
import Foundation
import STUN
import TurnClientKit
/// The settings of one load run (`mediarelay-load --relay ...`, `--target ...` or `--turn ...`).
public struct LoadOptions: Sendable, Equatable {
    /// Control API, `http://HOST:PORT`; required unless `target` is given (then optional, for stats).
    public var relay: String?
    public var token: String?
    public var streams = 10
    /// Total offered datagrams/s over all streams (constant profile).
    public var rate = 1000.0
    public var size = 200
    public var seconds = 5.0
    public var profile = TrafficProfile.constant
    public var tos: UInt8?
    public var bitrate = TrafficProfile.defaultVideoBitrate
    public var bidirectional = false
    public var json = false
    /// Forward-rule mode: the rule's listen address the streams send to.
    public var target: String?
    /// Forward-rule mode: where the generator's receiver listens as the rule's upstream.
    public var upstreamListen: String?
    /// TURN mode: the TURN server's `HOST:PORT` the clients allocate on.
    public var turn: String?
    /// TURN mode: the static user or REST secret the clients sign with.
    public var turnCredential: TurnCredential?
    /// TURN mode: the allocation lifetime the clients request, in seconds.
    public var turnLifetime: UInt32 = 600
    /// TURN mode: refresh every this many seconds instead of following the granted lifetimes.
    public var turnRefresh: Double?
    /// TURN mode: UDP, or a TCP or TLS connection per client (`--turn-transport`).
    public var turnTransport = TurnTransport.udp
    /// TURN over TLS: verify the server's certificate against this CA file (`--tls-ca`).
    public var tlsCA: String?
    /// TURN mode: an echo peer's `HOST:PORT` in place of the generator's own peer socket (`--turn-peer`).
    public var turnPeer: String?
    /// TURN mode: one echo peer for all clients, or one address each counted up from
    /// `turnPeer`'s (`--turn-peers`).
    public var turnPeers = TurnPeers.shared
    /// TURN mode: data as Send indications instead of ChannelData (`--turn-send-indications`).
    public var turnSendIndications = false
    /// Seconds the receiver keeps listening after the last send for datagrams still in
    /// flight (it stops earlier once everything sent has arrived).
    public var drain = 0.3
    /// Listed-legs mode: a file listing sessions that exist without a control API, one per line,
    /// its legs' HOST:PORT (the C reference forwarder's `--legs-file`).
    public var legs: String?
    /// The C reference forwarder's counters file, read with `relayPID` in place of /v1/stats.
    public var forwarderStats: String?
    /// The name the C reference forwarder's figures go under (`relay_engine`): its backend,
    /// which it does not report itself.
    public var forwarderEngine = "c-perpacket"
    /// Seconds at the start whose datagrams are left out of the latency figures.
    public var warmup = 0.5
    /// The relay's process id, to read its CPU from /proc next to /v1/stats.
    public var relayPID: Int32?
    /// Video: send each frame as one GSO send (UDP_SEGMENT), as a sender bursting frames would.
    public var senderGSO = false
    /// Print a progress line per second on stderr.
    public var progress = true
    /// How each stream's sender reacts to CE marks and losses its receiver reports.
    public var congestionControl = CongestionControl.none
    /// The sending thread on `sourceMask`, the receiving one on `sinkMask` (compare `--pin`;
    /// the relay goes on `forwarderMask`).
    public var placement: CPUPlacement?
    /// The receiving thread polls without ever sleeping, at SCHED_IDLE so that the sending
    /// thread on the same CPU takes that CPU whenever it is due (compare `--pin relay`). A
    /// receiver asleep in poll is woken by every datagram that finds it so, and the relay's send
    /// pays for that wake-up across CPUs; polling, it is never asleep, as a NIC's transmit wakes
    /// no one, and it reads each datagram as soon as the sender lets it run.
    public var receiverSpins = false
    /// Latency ends when the kernel queued each datagram to the receiving socket (SO_TIMESTAMPNS;
    /// on loopback, during the relay's send), not when the receiving thread read it: the
    /// generator's own scheduling delay stays out of the figures (compare `--pin relay`).
    public var arrivalStamps = false
    /// Session mode: more fields of each POST /v1/sessions body, as a JSON object's text
    /// (`{"max_packets_per_second": 2000, "ecn_marking": "off"}`); the generator sets "legs".
    public var sessionFields: String?

    public init() {}

    /// `sessionFields` without its braces, as `RelayControl.createSession` takes them.
    var sessionFieldMembers: String {
        guard let text = sessionFields?.trimmingCharacters(in: .whitespaces), text.hasPrefix("{"), text.hasSuffix("}") else { return "" }
        return String(text.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
    }

    /// The traffic this run offers.
    public var shape: TrafficShape {
        TrafficShape(profile: profile, streams: streams, rate: rate, size: size, bitrate: bitrate, tos: tos)
    }
}
