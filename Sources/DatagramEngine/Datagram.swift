import NetAddress
/// Names a socket registered with one engine. The generation makes a stale identifier (a
/// socket closed and its slot reused) miss instead of reaching the new socket.
public struct SocketID: Hashable, Sendable {
    public let slot: Int32
    public let generation: UInt32

    public init(slot: Int32, generation: UInt32) {
        self.slot = slot
        self.generation = generation
    }
}

/// Who a socket belongs to, chosen by the table that registered it: a role of the table's
/// own numbering and the index of its entry. Every event from the socket carries it, so the
/// owner dispatches on it directly, without a second table kept in step with the engine's.
/// `unowned` (role 0) is never dispatched: a socket being closed, or one not yet given out.
///
/// Packed in 32 bits (role in the top 8, index in the low 24), so that recording a datagram
/// stores one word for it: the index of a table entry stays below 16,777,216.
public struct OwnerTag: Equatable, Sendable {
    public let rawValue: UInt32

    @inlinable
    public init(role: UInt8, index: Int32) {
        precondition(index >= 0 && index < 1 << 24, "an owner tag's index is 0..<16777216")
        rawValue = UInt32(role) << 24 | UInt32(index)
    }

    @inlinable public var role: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 24) }
    @inlinable public var index: Int32 { Int32(bitPattern: rawValue & 0xFF_FFFF) }

    public static let unowned = OwnerTag(role: 0, index: 0)
}

/// One datagram the engine received. `bytes` points into the engine's own buffers and stays
/// valid until the next `receive` call: long enough to forward it without a copy. `owner` is
/// the socket's tag as it stands when the datagram is read (`DatagramEngine.setOwner`).
public struct ReceivedDatagram {
    public var socket: SocketID
    public var owner: OwnerTag
    public var source: Endpoint
    public var trafficClass: TrafficClass
    public var bytes: UnsafeRawBufferPointer
    /// When the kernel received it, in `MonotonicClock` nanoseconds (the kernel's
    /// SO_TIMESTAMPNS stamp, which is CLOCK_REALTIME, moved onto the monotonic clock with one
    /// offset per turn); 0 when `EngineConfiguration.receiveTimestamps` is off. A `MonotonicClock`
    /// read after `receive` less this is the datagram's wait in its socket's queue. The segments
    /// of a UDP GRO buffer share their buffer's.
    public var receivedAt: UInt64
    /// The local address the datagram was sent to, port 0, when its socket is bound to a
    /// wildcard address (the kernel's IP_PKTINFO / IPV6_PKTINFO; an IPv4 address in its mapped
    /// form, as `Endpoint` keeps it); all zero (`::`) on a socket bound to one address, which
    /// answers from that address anyway. An answer enqueued `from` it leaves from the address
    /// the sender reached, as the sender (and every NAT and firewall on the way) expects.
    public var localAddress: Endpoint
}

/// One datagram waiting to be sent. The bytes are borrowed: they must stay valid until the
/// engine's next `flush` returns (received bytes do, until the next `receive`).
/// (@usableFromInline for the engine's inlinable `enqueue`.)
@usableFromInline struct OutgoingDatagram {
    @usableFromInline var socket: SocketID
    @usableFromInline var destination: Endpoint
    @usableFromInline var trafficClass: TrafficClass
    @usableFromInline var bytes: UnsafeRawBufferPointer
    /// The local address to send from (IP_PKTINFO / IPV6_PKTINFO); a wildcard address leaves
    /// the choice to the kernel's routing, as for a socket bound to one address.
    @usableFromInline var source: Endpoint

    @inlinable
    init(socket: SocketID, destination: Endpoint, source: Endpoint, trafficClass: TrafficClass, bytes: UnsafeRawBufferPointer) {
        self.socket = socket
        self.destination = destination
        self.source = source
        self.trafficClass = trafficClass
        self.bytes = bytes
    }
}
