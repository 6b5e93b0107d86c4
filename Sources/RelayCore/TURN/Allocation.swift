import DatagramEngine
import NetAddress
import STUN

/// A TURN client as the relay knows it: the socket it talks to, its address and, on a listener
/// bound to a wildcard address, the relay's address it sent to (RFC 8656's 5-tuple has both
/// ends), which every answer and relayed datagram to it leaves from.
struct TurnClient: Hashable {
    /// Where the client's messages arrive and its answers leave: the UDP listener it sends
    /// to, or, over TCP or TLS, the client's own stream.
    var socket: SocketID
    var address: Endpoint
    /// The local address the client's datagrams reach (`ReceivedDatagram.localAddress`): all
    /// zero on a listener bound to one address and over a stream, whose socket knows its own.
    var localAddress = Endpoint(high: 0, low: 0, port: 0)
    /// Over TCP or TLS, the index of the client's connection in `TurnStreamClients` (not the
    /// engine's registry slot, which `socket` holds); -1 for a client over UDP. Over a stream
    /// the connection is the 5-tuple: one client, one allocation at most.
    var connectionIndex: Int32 = -1

    /// No client: no socket has slot -1.
    static let nobody = TurnClient(socket: SocketID(slot: -1, generation: 0), address: Endpoint(high: 0, low: 0, port: 0))

    var isStream: Bool { connectionIndex >= 0 }

    /// Every field but the local address, packed into four words (the synthesized hash feeds
    /// six values, each a call into the hasher): looked up per datagram from a client the
    /// last-client entry misses. A client reaches one of the relay's addresses, almost always,
    /// so leaving it out of the hash costs no collisions; equality still tells them apart.
    func hash(into hasher: inout Hasher) {
        hasher.combine(UInt64(UInt32(bitPattern: socket.slot)) << 32 | UInt64(socket.generation))
        hasher.combine(address.high)
        hasher.combine(address.low)
        hasher.combine(UInt64(address.port) | UInt64(address.scope) << 16)
    }
}

/// One relayed transport address of an allocation (an allocation has one per family).
struct RelayedSocket {
    var socket: SocketID
    var port: UInt16
    /// What XOR-RELAYED-ADDRESS says: the advertised address with this port.
    var advertised: Endpoint

    /// The family of the socket (the advertised address is always of the bound family).
    var ipv6: Bool { !advertised.isIPv4 }
}

/// Datagrams and bytes an allocation relayed, by framing and direction, and its ECN counts.
public struct AllocationCounters: Sendable {
    public var channelDataIn: UInt64 = 0
    public var channelDataOut: UInt64 = 0
    public var indicationsIn: UInt64 = 0
    public var indicationsOut: UInt64 = 0
    public var bytesToPeers: UInt64 = 0
    public var bytesToClient: UInt64 = 0
    /// ECN codepoints received from the client and from peers, by codepoint value.
    public var ecnFromClient = InlineArray<4, UInt64>(repeating: 0)
    public var ecnFromPeers = InlineArray<4, UInt64>(repeating: 0)
    /// ECN codepoints the relay sent to the client and to peers (after its marking).
    public var ecnToClient = InlineArray<4, UInt64>(repeating: 0)
    public var ecnToPeers = InlineArray<4, UInt64>(repeating: 0)
    /// Datagrams of this allocation not relayed, by `TurnDropReason`.
    public var drops = InlineArray<12, UInt64>(repeating: 0)
    /// Datagrams of either direction that the relay marked CE, by cause (CE that arrived is in
    /// the two counts above).
    public var ceMarked = CEMarkCounts()

    public init() {}

    public var dropped: UInt64 {
        var total: UInt64 = 0
        for index in drops.indices { total &+= drops[index] }
        return total
    }
}

/// One allocation (RFC 8656 section 2.2): its relayed sockets, permissions by peer address,
/// channels both ways, lifetime and counters. Lives in its worker's `AllocationStore` only.
struct Allocation {
    var client: TurnClient
    var username: String
    /// The Allocate that made it: its retransmission is answered again, another gets 437.
    var transaction: TransactionID
    var relay4: RelayedSocket?
    var relay6: RelayedSocket?
    var created: UInt64
    var expires: UInt64
    /// Peer addresses (port 0) and when their permission ends.
    var permissions: [Endpoint: UInt64] = [:]
    var channels = ChannelTable()
    var counters = AllocationCounters()
    /// The bandwidth quota (--turn-bandwidth), both directions together.
    var bandwidth = Policer(rate: 0, now: 0)
    /// Whether `bandwidth` and the egress cap mark its ECT datagrams CE (--ecn-marking when it
    /// was allocated).
    var ecnMarking = true
    /// How its client reaches the relay (the stats count relayed datagrams by it).
    var transport = TurnTransport.udp
    /// Whether the Allocate asked for DONT-FRAGMENT: its relayed sockets send with DF set, and
    /// so do its kernel entries towards peers.
    var dontFragment = false
    /// False for `vacant`, the filler of an index whose allocation is gone.
    var live = true
    /// The deadline this allocation is queued for in the store's `ExpiryQueue` (0: none).
    var scheduled: UInt64 = 0

    /// What an index of the `AllocationStore` holds between allocations.
    static var vacant: Allocation {
        var vacant = Allocation(client: .nobody, username: "", transaction: TransactionID(high: 0, low: 0), created: 0, expires: 0)
        vacant.live = false
        return vacant
    }

    /// The relayed socket that reaches `peer`'s family, if the allocation has one.
    @inline(__always)
    func relay(for peer: Endpoint) -> RelayedSocket? { peer.isIPv4 ? relay4 : relay6 }

    /// Whether a datagram to or from `peer` is allowed now.
    @inline(__always)
    func permits(_ peer: Endpoint, now: UInt64) -> Bool {
        guard let expires = permissions[Allocation.permissionKey(peer)] else { return false }
        return expires > now
    }

    /// Permissions are per IP address, any port (RFC 8656 section 9).
    @inline(__always)
    static func permissionKey(_ peer: Endpoint) -> Endpoint {
        Endpoint(high: peer.high, low: peer.low, port: 0, scope: 0)
    }
}
