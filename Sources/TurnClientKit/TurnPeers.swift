import ClientSockets
import Glibc

/// Whether a run's TURN clients share one echo peer or each have a peer address of their own
/// (`--turn-peers`). coturn's `--multiplex-peer` tells allocations apart by their peer's address,
/// so only `each` lets it relay for more than one client; bench/turn-bench.sh's `--peers each`
/// gives uclient's clients the same addresses, and one turnutils_peer listens on all of them.
public enum TurnPeers: String, Sendable, CaseIterable {
    case shared, each

    /// Peer addresses per /24 in `each`: the fourth octet walks 250 values, so from x.y.z.1 it
    /// never reaches .0 or .255.
    static let perBlock = 250

    /// The peer of each of `count` clients, in client order. `shared`: `first` for all. `each`:
    /// client i's is `first` (IPv4 A.B.C.D, --turn-peer's address) moved to
    /// A.B.(C + i / 250).(D + i % 250), on `first`'s port; from 127.1.0.1 that is turn-bench's
    /// 127.1.(i / 250).(i % 250 + 1). Throws, naming the options, for an IPv6 `first` and for
    /// more clients than fit below .255.
    package func addresses(first: SocketAddress, count: Int) throws(LoadError) -> [SocketAddress] {
        guard self == .each else { return Array(repeating: first, count: count) }
        guard first.family == AF_INET else {
            throw LoadError("--turn-peers each: --turn-peer \(first) is IPv6; the peers are IPv4 addresses counted up from it (e.g. 127.1.0.1:PORT)")
        }
        // sin_addr sits after sin_family and sin_port, in network order.
        let octets = withUnsafeBytes(of: first.storage) { raw in (4..<8).map { Int(raw[$0]) } }
        let last = count - 1
        guard octets[2] + last / Self.perBlock <= 255, octets[3] + min(last, Self.perBlock - 1) <= 255 else {
            throw LoadError("--turn-peers each: \(count) clients counted up from --turn-peer \(first) pass .255 "
                            + "(client i's peer is A.B.(C+i/250).(D+i%250)); start from 127.1.0.1")
        }
        var peers: [SocketAddress] = []
        peers.reserveCapacity(count)
        for i in 0..<count {
            let host = "\(octets[0]).\(octets[1]).\(octets[2] + i / Self.perBlock).\(octets[3] + i % Self.perBlock)"
            peers.append(try SocketAddress(host: host, port: first.port))
        }
        return peers
    }
}
