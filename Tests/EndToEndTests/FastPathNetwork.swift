import Foundation
import Glibc
import NetAddress
import TestPorts
import TestSupport
import XCTest

/// The real relay with its kernel fast path between a client and a peer, each in a network
/// namespace of its own: client ns - veth - relay ns (two devices) - veth - peer ns. The
/// relay's program sits on its two devices' ingress, so every datagram it forwards crosses a
/// real interface, and what the client and peer read is what the kernel delivered (their
/// sockets are `IndependentPeer`s: LoadGen's socket code, which reads the TOS byte).
///
/// Each link has an IPv4 /24 and an IPv6 /64 (no duplicate address detection, so usable at
/// once); the relay's side is .1 / ::1. A test fixture: made with `ip`, removed with its
/// namespaces by `remove()`. Sockets belong to the namespace they are created in (`inside`);
/// the relay's control API is on 127.0.0.1 of the relay's namespace, so every HTTP call to it
/// is made from inside there too (`stats`, `createSession`...).
final class FastPathNetwork {
    enum Side { case client, relay, peer }

    /// One family's addresses: the client's, the relay's on the client's link (`front`) and
    /// on the peer's link (`back`), the peer's, and the peer link's prefix (TURN peers there
    /// are private addresses: the relay refuses them unless allowed).
    struct Family {
        let client: String
        let front: String
        let back: String
        let peer: String
        let peerSubnet: String

        /// `host` as a command line writes it beside a port.
        static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
    }

    static let ipv4 = Family(client: "10.72.1.2", front: "10.72.1.1", back: "10.72.2.1", peer: "10.72.2.2", peerSubnet: "10.72.2.0/24")
    static let ipv6 = Family(client: "fd72:1::2", front: "fd72:1::1", back: "fd72:2::1", peer: "fd72:2::2", peerSubnet: "fd72:2::/64")

    /// The relay's two devices (the fast path's interfaces) and the client's and peer's.
    let frontDevice: String
    let backDevice: String
    let clientDevice: String
    let peerDevice: String
    private let namespaces: [Side: NetworkNamespace]

    /// Fails (or skips outside `make test`) when not root: namespaces and BPF both need it.
    init() throws {
        try HostRequirement.require(getuid() == 0, "the fast path's end-to-end tests need root (network namespaces, BPF)")
        try HostRequirement.requireTools(["/usr/sbin/ip", "/usr/sbin/ethtool"])
        try IPv6Loopback.require()
        // Device names unique on the host: veth pairs are made from the host's namespace.
        let id = getpid() % 100_000
        (clientDevice, frontDevice, backDevice, peerDevice) = ("fe\(id)c", "fe\(id)rc", "fe\(id)rp", "fe\(id)p")
        let made = try NetworkNamespace.make("fpe-\(id)-c", "fpe-\(id)-r", "fpe-\(id)-p")
        namespaces = [.client: made[0], .relay: made[1], .peer: made[2]]
        do {
            try NetworkNamespace.check(["ip", "link", "add", clientDevice, "netns", made[0].name, "type", "veth",
                                        "peer", "name", frontDevice, "netns", made[1].name])
            try NetworkNamespace.check(["ip", "link", "add", backDevice, "netns", made[1].name, "type", "veth",
                                        "peer", "name", peerDevice, "netns", made[2].name])
            let (v4, v6) = (Self.ipv4, Self.ipv6)
            for (namespace, device, address4, address6) in [(made[0], clientDevice, v4.client, v6.client), (made[1], frontDevice, v4.front, v6.front),
                                                            (made[1], backDevice, v4.back, v6.back), (made[2], peerDevice, v4.peer, v6.peer)] {
                try namespace.run(["addr", "add", address4 + "/24", "dev", device])
                try namespace.run(["addr", "add", address6 + "/64", "dev", device, "nodad"])
                try namespace.run(["link", "set", device, "up"])
            }
        } catch {
            remove()
            throw error
        }
    }

    func remove() {
        for namespace in namespaces.values { namespace.remove() }
    }

    /// Runs `body` on this thread inside `side`'s namespace (sockets and processes made there
    /// stay there), then returns the thread to its own.
    func inside<T>(_ side: Side, _ body: () throws -> T) throws -> T {
        try namespaces[side]!.inside(body)
    }

    /// Transmit checksum offload on the client's and the peer's device. On (veth's default),
    /// their local senders leave the UDP checksum to the kernel (CHECKSUM_PARTIAL) and the
    /// datagrams reach the relay that way; off, each sender computes its own.
    func setChecksumOffload(_ on: Bool) throws {
        for (side, device) in [(Side.client, clientDevice), (.peer, peerDevice)] {
            try NetworkNamespace.check(["ip", "netns", "exec", namespaces[side]!.name, "ethtool", "-K", device, "tx", on ? "on" : "off"])
        }
    }

    /// Starts mediarelay in the relay's namespace with `--fast-path MODE` on its two devices
    /// (one worker) and `arguments`; with "tc" it checks the program is on both before
    /// returning.
    func startRelay(fastPath mode: String, _ arguments: [String]) throws -> RelayProcess {
        let relay = try inside(.relay) {
            try RelayProcess(ports: PortBlock(count: 20), ["--workers", "1", "--fast-path", mode,
                                                          "--fast-path-interface", frontDevice, "--fast-path-interface", backDevice] + arguments)
        }
        if mode != "off" {
            let status = try inside(.relay) { try relay.stats() }["fast_path"] as? [String: Any] ?? [:]
            guard status["on"] as? Bool == true else {
                relay.stop()
                throw NetworkNamespace.Failure(step: "the fast path did not come on", output: "\(status); log: \(relay.log)")
            }
        }
        return relay
    }

    /// The kernel's side of /v1/stats now.
    func kernel(_ relay: RelayProcess) throws -> KernelCounts {
        let stats = try inside(.relay) { try relay.stats() }
        guard let fastPath = stats["fast_path"] as? [String: Any] else {
            throw NetworkNamespace.Failure(step: "/v1/stats has no fast_path", output: "\(stats)")
        }
        return KernelCounts(fastPath)
    }

    /// POST /v1/sessions with `json` from inside the relay's namespace.
    func createSession(_ relay: RelayProcess, _ json: String = "{}") throws -> (id: String, ports: [UInt16]) {
        let session = try inside(.relay) { try relay.createSession(json) }
        return (session.id, session.legs.map(\.port))
    }

    /// A session's legs as GET /v1/sessions/ID describes them.
    func legs(_ relay: RelayProcess, session id: String) throws -> [[String: Any]] {
        let info = try inside(.relay) { try relay.waitFor("/v1/sessions/\(id)") { _ in true } }
        return info["legs"] as? [[String: Any]] ?? []
    }

    /// A session of `relay` with leg 0 latched by `a` (a socket in the client's namespace) and
    /// leg 1 by `b` (in the peer's), each sending one Not-ECT datagram `[0xFF]` to the relay's
    /// address on its own link: b's goes on to `a`, which reads it here. Once both legs are
    /// latched the pair is the kernel's.
    func latchedSession(_ relay: RelayProcess, _ json: String, a: IndependentPeer, b: IndependentPeer,
                        family: Family = FastPathNetwork.ipv4) throws -> (id: String, ports: [UInt16]) {
        let session = try createSession(relay, json)
        try a.send([0xFF], tos: 0, to: family.front, port: session.ports[0])
        try inside(.relay) { try relay.waitForLatch(session: session.id, leg: 0) }
        try b.send([0xFF], tos: 0, to: family.back, port: session.ports[1])
        guard a.receive(expected: 1).first?.bytes == [0xFF] else {
            throw NetworkNamespace.Failure(step: "latching session \(session.id)", output: "leg 1's first datagram never reached leg 0's peer")
        }
        return session
    }

    /// The `fast_path` object of /v1/stats: what the kernel forwarded, refused and handed back.
    struct KernelCounts {
        let datagrams: Int
        let entries: Int
        let refusals: Int
        let handedBack: [String: Int]
        /// What the kernel carried by ECN codepoint as it arrived and as it left, in
        /// codepoint order: Not-ECT, ECT(1), ECT(0), CE.
        let ecnIn: [Int]
        let ecnOut: [Int]

        init(_ object: [String: Any]) {
            datagrams = object["datagrams"] as? Int ?? -1
            entries = object["entries"] as? Int ?? -1
            refusals = object["refusals"] as? Int ?? -1
            handedBack = (object["handed_back"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Int }
            func byCodepoint(_ key: String) -> [Int] {
                let counts = object[key] as? [String: Any] ?? [:]
                return ["not_ect", "ect1", "ect0", "ce"].map { counts[$0] as? Int ?? -1 }
            }
            ecnIn = byCodepoint("ecn_in")
            ecnOut = byCodepoint("ecn_out")
        }

        /// What the kernel carried since `earlier`, by codepoint as it arrived and as it left.
        func ecnSince(_ earlier: KernelCounts) -> (arrived: [Int], left: [Int]) {
            (zip(ecnIn, earlier.ecnIn).map { $0 - $1 }, zip(ecnOut, earlier.ecnOut).map { $0 - $1 })
        }

        /// Datagrams handed back for `reason` ("checksum_state", "fragment"...).
        func handedBack(_ reason: String) -> Int { handedBack[reason] ?? 0 }

        /// Datagrams handed back for any reason.
        var handedBackTotal: Int { handedBack.values.reduce(0, +) }
    }
}
