import CBPF
import NetAddress

/// What the kernel does with a datagram whose 5-tuple matches a FlowKey: send it on from
/// `source` to `destination` (the same family as the key), with the ChannelData header removed
/// or added as `kind` says, and the traffic class byte by `dscp` and `ecn`.
///
/// Where it goes: with `egressInterface` nil, the kernel's routes decide, looked up for the
/// rewritten addresses before the rewrite: a forwardable route sends it out of the route's
/// interface to the route's next hop, a local destination delivers it up this host's stack,
/// anything else (no route, a blackhole, a local address no socket takes) hands it back as
/// `.noRoute`. An explicit index sends it out of that interface; 0 delivers it in this host.
/// (Under XDP an explicit index is looked up too, for the next hop's Ethernet address, and
/// the route must leave by that interface.)
///
/// When the kernel hands the flow's datagrams to user space unmodified instead (times are
/// nanoseconds on MonotonicClock, CLOCK_MONOTONIC: the kernel's bpf_ktime_get_ns): past
/// `expiresAt`; once the flow has been quiet (nothing forwarded) for longer than
/// `idleTimeout`, counted from the last datagram forwarded or the install, until the next
/// install; when `credited` and the byte credit the owner granted (KernelFastPath's
/// `exchangeCredit`, starting at 0) does not cover the datagram as it would be sent (after a
/// ChannelData header is removed or added); and when `packetCredited` and the packet credit
/// granted (`exchangePacketCredit`, starting at 0) is used up. With both, a datagram goes
/// through only when both credits cover it, and then it takes from both.
///
/// What leaves is what the relay's socket for the flow would send: DF as `dontFragment` says
/// (IPv4), the host's TTL or hop limit, and over IPv6 a flow label of the relay's own for the
/// rewritten 5-tuple (where the host labels flows), never the sender's.
public struct FlowEntry: Equatable, Sendable {
    /// What happens to the payload.
    public enum Kind: Equatable, Sendable {
        /// Untouched: session legs and forward-rule clients.
        case plain
        /// TURN client to peer: the ChannelData header of `channel` removed, the payload cut to
        /// the length it names. Datagrams with another channel number go to user space.
        case stripChannel(UInt16)
        /// TURN peer to client: a ChannelData header for `channel` put in front.
        case addChannel(UInt16)
    }

    /// The DSCP sent on: the one that arrived, a class's value (0-63), or 0.
    public enum DSCP: Equatable, Sendable {
        case mirror
        case value(UInt8)
        case zero
    }

    /// The ECN codepoint sent on: the one that arrived, or Not-ECT.
    public enum ECN: Equatable, Sendable {
        case copy
        case clear
    }

    public var source: Endpoint
    public var destination: Endpoint
    public var kind: Kind
    public var dscp: DSCP
    public var ecn: ECN
    public var egressInterface: UInt32?
    public var expiresAt: UInt64?
    public var idleTimeout: UInt64?
    public var credited: Bool
    public var packetCredited: Bool
    /// IPv4 datagrams leave with DF set (the default: the relay's sockets send with the kernel's
    /// path MTU discovery), or clear (a TURN allocation without DONT-FRAGMENT).
    public var dontFragment: Bool

    public init(source: Endpoint, destination: Endpoint, kind: Kind = .plain, dscp: DSCP = .mirror,
                ecn: ECN = .copy, egressInterface: UInt32? = nil, expiresAt: UInt64? = nil,
                idleTimeout: UInt64? = nil, credited: Bool = false, packetCredited: Bool = false,
                dontFragment: Bool = true) {
        self.source = source
        self.destination = destination
        self.kind = kind
        self.dscp = dscp
        self.ecn = ecn
        self.egressInterface = egressInterface
        self.expiresAt = expiresAt
        self.idleTimeout = idleTimeout
        self.credited = credited
        self.packetCredited = packetCredited
        self.dontFragment = dontFragment
    }

    /// The IPv6 flow label the relay sends this flow with: 20 bits of a hash of the rewritten
    /// 5-tuple, keyed anew in each process (as the kernel keys its own), never 0 ("no label").
    var flowLabel: UInt32 {
        var hasher = Hasher()
        hasher.combine(source)
        hasher.combine(destination)
        let label = UInt32(truncatingIfNeeded: hasher.finalize()) & 0xF_FFFF
        return label == 0 ? 1 : label
    }

    /// Why this entry cannot go into the kernel for `key`, or nil when it can.
    func refusal(for key: FlowKey) -> String? {
        guard key.isSameFamily else { return "\(key): source and destination differ in family" }
        guard key.channel == 0 || (0x4000...0x7FFF).contains(key.channel) else {
            return "\(key): channel \(key.channel) is outside 0x4000-0x7FFF"
        }
        guard source.isIPv4 == key.source.isIPv4, destination.isIPv4 == source.isIPv4 else {
            return "\(key): the rewrite to \(source) -> \(destination) changes family"
        }
        switch kind {
        case .plain: break
        case .stripChannel(let channel), .addChannel(let channel):
            guard (0x4000...0x7FFF).contains(channel) else { return "\(key): channel \(channel) is outside 0x4000-0x7FFF" }
        }
        if case .value(let value) = dscp, value > 63 { return "\(key): DSCP \(value) is above 63" }
        return nil
    }

    func kernelEntry(slot: UInt32, flowLabel: UInt32) -> mr_fp_entry {
        var entry = mr_fp_entry()
        withUnsafeMutableBytes(of: &entry.source) { FlowKey.write(source, into: $0) }
        withUnsafeMutableBytes(of: &entry.destination) { FlowKey.write(destination, into: $0) }
        entry.source_port = source.port.bigEndian
        entry.destination_port = destination.port.bigEndian
        switch kind {
        case .plain:
            entry.kind = UInt8(MR_FP_KIND_PLAIN.rawValue)
        case .stripChannel(let channel):
            entry.kind = UInt8(MR_FP_KIND_CHANNEL_STRIP.rawValue)
            entry.channel = channel
        case .addChannel(let channel):
            entry.kind = UInt8(MR_FP_KIND_CHANNEL_ADD.rawValue)
            entry.channel = channel
        }
        switch dscp {
        case .mirror: entry.dscp_mode = UInt8(MR_FP_DSCP_MIRROR.rawValue)
        case .value(let value):
            entry.dscp_mode = UInt8(MR_FP_DSCP_CLASS.rawValue)
            entry.dscp_value = value
        case .zero: entry.dscp_mode = UInt8(MR_FP_DSCP_ZERO.rawValue)
        }
        entry.ecn_mode = UInt8(ecn == .copy ? MR_FP_ECN_COPY.rawValue : MR_FP_ECN_CLEAR.rawValue)
        if let egressInterface {
            entry.egress_mode = UInt8(MR_FP_EGRESS_INTERFACE.rawValue)
            entry.egress_ifindex = egressInterface
        } else {
            entry.egress_mode = UInt8(MR_FP_EGRESS_ROUTE.rawValue)
        }
        entry.flags = (credited ? UInt8(MR_FP_FLAG_CREDITED) : 0) | (packetCredited ? UInt8(MR_FP_FLAG_PACKET_CREDITED) : 0)
            | (dontFragment ? UInt8(MR_FP_FLAG_DONT_FRAGMENT) : 0)
        entry.flow_label = source.isIPv4 ? 0 : flowLabel
        entry.counter_slot = slot
        entry.expires_ns = expiresAt.map { max($0, 1) } ?? 0
        entry.idle_ns = idleTimeout.map { max($0, 1) } ?? 0
        return entry
    }
}
