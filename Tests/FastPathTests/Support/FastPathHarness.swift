import FastPath
import Glibc
import NetAddress
import TestSupport

/// A relay in the middle of a NamespaceTriangle, for one address family: the fast path loaded
/// and attached to the relay's two devices by `mode` (unless `attach` is false; for XDP with GRO
/// on at the far ends, which native XDP redirects on veth need), and a plain UDP socket
/// at each of the four places a datagram can arrive: the client, the peer, and the relay's
/// user-space sockets on the client side and on the peer side (where whatever the kernel hands
/// back lands). `toPeer` and `toClient` are the two keys of a relayed flow.
final class FastPathHarness {
    let triangle: NamespaceTriangle
    let fastPath: KernelFastPath?
    let clientSide: UInt32
    let peerSide: UInt32
    let client: ProbeSocket
    let peer: ProbeSocket
    let relayClientSide: ProbeSocket
    let relayPeerSide: ProbeSocket

    init(ipv6: Bool, attach: Bool = true, mode: KernelFastPath.AttachMode = .tc) throws {
        triangle = try NamespaceTriangle()
        do {
            // Host `host` on link `link` of the triangle.
            func endpoint(link: Int, host: Int, port: UInt16) -> Endpoint {
                Endpoint(host: ipv6 ? "fd71:\(link)::\(host)" : "10.71.\(link).\(host)", port: port)!
            }
            client = try triangle.inside(.client) { try ProbeSocket(endpoint(link: 1, host: 2, port: 40000)) }
            relayClientSide = try triangle.inside(.relay) { try ProbeSocket(endpoint(link: 1, host: 1, port: 3478)) }
            relayPeerSide = try triangle.inside(.relay) { try ProbeSocket(endpoint(link: 2, host: 1, port: 50000)) }
            peer = try triangle.inside(.peer) { try ProbeSocket(endpoint(link: 2, host: 2, port: 60000)) }
            try Self.exchange(client, relayClientSide)
            try Self.exchange(peer, relayPeerSide)
            if mode == .xdp { try triangle.setOuterGRO(true) }
            guard attach else {
                (fastPath, clientSide, peerSide) = (nil, 0, 0)
                return
            }
            let loaded: (KernelFastPath, UInt32, UInt32) = try triangle.inside(.relay) {
                do {
                    let fastPath = try KernelFastPath(capacity: 64)
                    return (fastPath, try fastPath.attach(interface: "rc", mode: mode), try fastPath.attach(interface: "rp", mode: mode))
                } catch {
                    try HostRequirement.require(false, "\(error)")
                    throw error
                }
            }
            (fastPath, clientSide, peerSide) = loaded
        } catch {
            triangle.remove()
            throw error
        }
    }

    func remove() { triangle.remove() }

    /// One datagram each way between `a` and `b` through user space, before any entry exists:
    /// new links need a moment (IPv6 neighbour discovery on a link just up drops the first
    /// datagram), and the kernel's neighbour entries are then in place for bpf_redirect_neigh.
    private static func exchange(_ a: ProbeSocket, _ b: ProbeSocket) throws {
        for _ in 0..<20 {
            try a.send([1], to: b.local)
            if b.receive(timeout: 0.25) != nil { break }
        }
        try b.send([2], to: a.local)
        guard a.receive(timeout: 2) != nil else {
            throw Command.Failure(step: "a datagram from \(b.local) to \(a.local) through user space", output: "none arrived")
        }
        while b.receive(timeout: 0) != nil {}
    }

    var toPeer: FlowKey { FlowKey(source: client.local, destination: relayClientSide.local) }
    var toClient: FlowKey { FlowKey(source: peer.local, destination: relayPeerSide.local) }

    /// Client to peer, sent on from the relay's peer-side address: out of the peer-side device,
    /// or, when `routed`, wherever the kernel's routes say.
    func entryToPeer(_ kind: FlowEntry.Kind = .plain, dscp: FlowEntry.DSCP = .mirror, ecn: FlowEntry.ECN = .copy,
                     routed: Bool = false, expiresAt: UInt64? = nil, idleTimeout: UInt64? = nil, credited: Bool = false,
                     packetCredited: Bool = false) -> FlowEntry {
        FlowEntry(source: relayPeerSide.local, destination: peer.local, kind: kind, dscp: dscp, ecn: ecn,
                  egressInterface: routed ? nil : peerSide, expiresAt: expiresAt, idleTimeout: idleTimeout, credited: credited,
                  packetCredited: packetCredited)
    }

    /// Peer to client, sent on from the relay's client-side address.
    func entryToClient(_ kind: FlowEntry.Kind = .plain, dscp: FlowEntry.DSCP = .mirror, ecn: FlowEntry.ECN = .copy,
                       routed: Bool = false, expiresAt: UInt64? = nil, idleTimeout: UInt64? = nil, credited: Bool = false,
                       packetCredited: Bool = false) -> FlowEntry {
        FlowEntry(source: relayClientSide.local, destination: client.local, kind: kind, dscp: dscp, ecn: ecn,
                  egressInterface: routed ? nil : clientSide, expiresAt: expiresAt, idleTimeout: idleTimeout, credited: credited,
                  packetCredited: packetCredited)
    }
}

extension FastPathHarness {
    /// A harness (tc) whose client and peer share `channel` in the kernel both ways, the
    /// entries sent out of the relay's devices, with the client's and peer's transmit checksum
    /// offload as `senders` says and the relay's as `relay` says (NamespaceTriangle).
    static func boundChannel(_ channel: UInt16, ipv6: Bool, senders: Bool, relay: Bool) throws -> (FastPathHarness, KernelFastPath) {
        let harness = try FastPathHarness(ipv6: ipv6)
        do {
            guard let fastPath = harness.fastPath else { throw Command.Failure(step: "loading the fast path", output: "none") }
            try harness.triangle.setChecksumOffload(senders: senders, relay: relay)
            try fastPath.put(harness.toPeer, harness.entryToPeer(.stripChannel(channel)))
            try fastPath.put(harness.toClient, harness.entryToClient(.addChannel(channel)))
            return (harness, fastPath)
        } catch {
            harness.remove()
            throw error
        }
    }

    /// A ChannelData message of `channel` carrying `payload`, unpadded.
    static func channelData(_ payload: [UInt8], channel: UInt16) -> [UInt8] {
        [UInt8(channel >> 8), UInt8(channel & 0xff), UInt8(payload.count >> 8), UInt8(payload.count & 0xff)] + payload
    }
}
