import Foundation
import Glibc
import NetAddress
import TestPorts
import TestSupport
import XCTest

/// The real relay with its kernel fast path between a client and a peer, each in a network
/// namespace of its own (`NamespaceTriangle`: client ns - veth - relay ns (two devices) - veth
/// - peer ns). The relay's program sits on its two devices' ingress, so every datagram it
/// forwards crosses a real interface, and what the client and peer read is what the kernel
/// delivered (their sockets are `IndependentPeer`s: LoadGen's socket code, which reads the TOS
/// byte). The relay's control API is on 127.0.0.1 of the relay's namespace, so every HTTP call
/// to it is made from inside there too (`stats`, `createSession`...). Removed with its
/// namespaces by `remove()`.
final class FastPathNetwork {
    typealias Side = NamespaceTriangle.Side
    typealias Family = NamespaceTriangle.Family

    static let ipv4 = NamespaceTriangle.ipv4
    static let ipv6 = NamespaceTriangle.ipv6

    /// The relay's two devices (the fast path's interfaces) and the client's and peer's.
    let frontDevice = NamespaceTriangle.frontDevice
    let backDevice = NamespaceTriangle.backDevice
    let clientDevice = NamespaceTriangle.clientDevice
    let peerDevice = NamespaceTriangle.peerDevice
    private let triangle: NamespaceTriangle

    /// Fails (or skips outside `make test`) when not root: namespaces and BPF both need it.
    init() throws {
        try IPv6Loopback.require()
        triangle = try NamespaceTriangle(tag: "fpe")
    }

    func remove() { triangle.remove() }

    /// Runs `body` on this thread inside `side`'s namespace (sockets and processes made there
    /// stay there), then returns the thread to its own.
    func inside<T>(_ side: Side, _ body: () throws -> T) throws -> T { try triangle.inside(side, body) }

    /// Runs `command` inside `side`'s namespace to its end (`sysctl -w ...`, `ip link set ...`).
    func run(in side: Side, _ command: [String]) throws { try triangle.run(in: side, command) }

    /// Transmit checksum offload off on every device, the relay's too: every datagram, the
    /// relay's own sends included, leaves with its checksum finished, as a sniffer on a link
    /// must see it to check it.
    func finishEveryChecksum() throws { try triangle.setChecksumOffload(senders: false, relay: false) }

    /// Turns GRO on the client's and the peer's devices on: native XDP on the relay's devices
    /// redirects frames into them, which veth delivers only with GRO on.
    func enableOuterGRO() throws { try triangle.setOuterGRO(true) }

    /// Transmit checksum offload on the client's and the peer's device. On (veth's default),
    /// their local senders leave the UDP checksum to the kernel (CHECKSUM_PARTIAL) and the
    /// datagrams reach the relay that way; off, each sender computes its own. The relay's own
    /// devices keep veth's default.
    func setChecksumOffload(_ on: Bool) throws { try triangle.setChecksumOffload(senders: on, relay: true) }

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
                throw Command.Failure(step: "the fast path did not come on", output: "\(status); log: \(relay.log)")
            }
        }
        return relay
    }

    /// The kernel's side of /v1/stats now.
    func kernel(_ relay: RelayProcess) throws -> KernelCounts {
        let stats = try inside(.relay) { try relay.stats() }
        guard let fastPath = stats["fast_path"] as? [String: Any] else {
            throw Command.Failure(step: "/v1/stats has no fast_path", output: "\(stats)")
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
            throw Command.Failure(step: "latching session \(session.id)", output: "leg 1's first datagram never reached leg 0's peer")
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
