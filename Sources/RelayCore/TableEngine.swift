import DatagramEngine
import Glibc
import NetAddress
import SystemSupport

/// What a table may ask of the engine, and nothing more: open a socket with the owner tag it
/// chooses (or change, drop or close it), enqueue a datagram and flush, and on a stream read
/// its input, consume it, write, wait for room, set a deadline and close. The tables are
/// generic over it, so their logic runs in tests on an in-memory implementation with no
/// socket and no sleep.
///
/// Contract: `DatagramEngine` is the one conforming type in production, and the worker names
/// its tables with it (`TurnTable<DatagramEngine>`), so the packet path calls the engine
/// directly: never an existential, never a witness table per datagram. The engine's own
/// contracts hold for every implementation: enqueued bytes stay the caller's until `flush`
/// returns; stream input stays valid until the next `consume`; `write` copies; an owner tag
/// given to a socket is carried by everything it delivers until `disown` or `unregister`.
protocol TableEngine: AnyObject {
    var configuration: EngineConfiguration { get }

    /// Binds a UDP socket on `address` (a port 0 asked for is given one), registers it with
    /// `owner`, and returns it with its bound address. `dontFragment` sets the DF bit of what
    /// it sends (nil: the system's default).
    func openDatagramSocket(binding address: Endpoint, options: SocketOptions, owner: OwnerTag,
                            dontFragment: Bool?) throws(SystemCallError) -> (socket: SocketID, local: Endpoint)
    /// Registers `socket`, bound already (a reserved port's), as `openDatagramSocket` would.
    func adoptDatagramSocket(_ socket: UDPSocket, owner: OwnerTag, dontFragment: Bool?) throws(SystemCallError) -> SocketID
    /// Listens for TCP connections on `address`, whose accepts carry `owner`; `freeBind` as
    /// `SocketOptions.freeBind`.
    func openStreamListener(binding address: Endpoint, freeBind: Bool, owner: OwnerTag) throws(SystemCallError)
    func setOwner(_ socket: SocketID, _ owner: OwnerTag)
    func disown(_ socket: SocketID)
    func unregister(_ sockets: [SocketID])

    /// Queues `bytes` for `destination` from `socket`; `source` names the local address it
    /// leaves from on a socket bound to a wildcard address (all zero: the socket's own).
    func enqueue(socket: SocketID, to destination: Endpoint, from source: Endpoint, trafficClass: TrafficClass,
                 bytes: UnsafeRawBufferPointer)
    func flush()

    func input(_ stream: SocketID) -> UnsafeRawBufferPointer
    func consume(_ stream: SocketID, _ count: Int)
    func write(_ stream: SocketID, _ bytes: UnsafeRawBufferPointer, pendingAtMost: Int) -> Bool
    func outputPending(_ stream: SocketID) -> Int
    func notifyWritable(_ stream: SocketID, pendingAtMost: Int)
    func setDeadline(_ stream: SocketID, _ nanoseconds: UInt64?)
    func close(_ stream: SocketID, keepingOutput: Bool)
}

extension TableEngine {
    /// Closes `stream` after what is queued on it is sent.
    func close(_ stream: SocketID) { close(stream, keepingOutput: true) }

    /// Writes all of `bytes` to `stream`'s output, whatever is pending there.
    func write(_ stream: SocketID, _ bytes: UnsafeRawBufferPointer) -> Bool { write(stream, bytes, pendingAtMost: .max) }
}

extension TableEngine {
    /// Queues `bytes` from the socket's own address (what the route picks on a wildcard).
    @inline(__always)
    func enqueue(socket: SocketID, to destination: Endpoint, trafficClass: TrafficClass, bytes: UnsafeRawBufferPointer) {
        enqueue(socket: socket, to: destination, from: Endpoint(high: 0, low: 0, port: 0), trafficClass: trafficClass, bytes: bytes)
    }
}

extension DatagramEngine: TableEngine {
    func openDatagramSocket(binding address: Endpoint, options: SocketOptions, owner: OwnerTag,
                            dontFragment: Bool?) throws(SystemCallError) -> (socket: SocketID, local: Endpoint) {
        let socket = try UDPSocket(binding: address, options: options)
        return (try adoptDatagramSocket(socket, owner: owner, dontFragment: dontFragment), socket.localEndpoint)
    }

    func adoptDatagramSocket(_ socket: UDPSocket, owner: OwnerTag, dontFragment: Bool?) throws(SystemCallError) -> SocketID {
        if let dontFragment { try Self.setDontFragment(socket, dontFragment) }
        return try register(socket, owner: owner)
    }

    func openStreamListener(binding address: Endpoint, freeBind: Bool, owner: OwnerTag) throws(SystemCallError) {
        _ = try listen(TCPListener(binding: address, options: ListenerOptions(reusePort: true, freeBind: freeBind)), owner: owner)
    }

    /// The DF bit of datagrams from a relayed socket (RFC 8656 section 14, IPv4 fragmentation):
    /// with DONT-FRAGMENT in the Allocate, set (IP_PMTUDISC_DO: one too large for the path is
    /// refused by the kernel, never fragmented); without it, clear (IP_PMTUDISC_DONT), the RFC's
    /// behaviour for a relay that cannot read the incoming datagram's DF bit: take it as 0.
    /// Linux's default (IP_PMTUDISC_WANT) would set DF whenever a datagram fits the path, so
    /// the client's choice would not show on the wire. IPv6 has no DF bit: IPV6_DONTFRAG only
    /// stops the relay itself from fragmenting. A failure fails the allocation rather than let
    /// it run without what the client asked for.
    private static func setDontFragment(_ socket: UDPSocket, _ dontFragment: Bool) throws(SystemCallError) {
        let descriptor = socket.descriptor
        let ipv4 = socket.family == AF_INET
        var value: Int32 = ipv4 ? (dontFragment ? IP_PMTUDISC_DO : IP_PMTUDISC_DONT) : (dontFragment ? 1 : 0)
        let (level, name) = ipv4 ? (Int32(IPPROTO_IP), IP_MTU_DISCOVER) : (Int32(IPPROTO_IPV6), IPV6_DONTFRAG)
        _ = try SystemCall.require(ipv4 ? "setsockopt(IP_MTU_DISCOVER) on a relayed socket" : "setsockopt(IPV6_DONTFRAG) on a relayed socket") {
            Int(setsockopt(descriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size)))
        }
    }
}
