import Foundation
import Glibc
import TestSupport

/// A test fixture for FastPathFidelityTests: a FastPathNetwork whose every sender, the relay
/// too, computes its own checksums (what a sniffer reads is finished) and whose outer devices
/// have GRO on (so the same namespaces serve `off`, `tc` and
/// native `xdp`), and one run of a relay per mode: sessions latched, each case's frame sent
/// from a raw socket on the client's link (or the peer's), and what reached the far leg read
/// there, by its socket and by a sniffer on the peer's link.
final class FidelityNetwork {
    private let network: FastPathNetwork

    init() throws {
        network = try FastPathNetwork()
        do {
            try network.finishEveryChecksum()
            try network.enableOuterGRO()
        } catch {
            network.remove()
            throw error
        }
    }

    func remove() { network.remove() }

    func run(in side: FastPathNetwork.Side, _ command: [String]) throws { try network.run(in: side, command) }

    func sysctl(_ side: FastPathNetwork.Side, _ setting: String) throws { try run(in: side, ["sysctl", "-q", "-w", setting]) }

    /// Starts the relay with `--fast-path mode` and `arguments`, latches a session per family
    /// the cases use, sends each case's frame to leg 0 with leg 0's client 5-tuple (from the
    /// peer's link for the names in `fromPeerSide`), and returns what came of them.
    func run(mode: String, _ arguments: [String], cases: [FastPathFidelityTests.Case],
             fromPeerSide: Set<String> = []) throws -> FastPathFidelityTests.Outcome {
        let relay = try network.startRelay(fastPath: mode, ["--relay-address", "::"] + arguments)
        defer { _ = relay.stop() }
        var legs: [Bool: (a: IndependentPeer, b: IndependentPeer, port: UInt16)] = [:]
        for ipv6 in Set(cases.map(\.ipv6)) {
            let family = ipv6 ? FastPathNetwork.ipv6 : FastPathNetwork.ipv4
            let a = try network.inside(.client) { try IndependentPeer(host: family.client) }
            let b = try network.inside(.peer) { try IndependentPeer(host: family.peer) }
            let session = try network.latchedSession(relay, "{}", a: a, b: b, family: family)
            legs[ipv6] = (a, b, session.ports[0])
        }
        let clientLink = try network.inside(.client) { try RawLink(interface: network.clientDevice) }
        let peerLink = try network.inside(.peer) { try RawLink(interface: network.peerDevice) }
        let (front, back) = try network.inside(.relay) {
            (try RawLink.linkAddress(network.frontDevice), try RawLink.linkAddress(network.backDevice))
        }
        peerLink.discard()
        let before = mode == "off" ? nil : try network.kernel(relay)
        for item in cases {
            guard let leg = legs[item.ipv6] else { continue }
            let family = item.ipv6 ? FastPathNetwork.ipv6 : FastPathNetwork.ipv4
            let spoofed = fromPeerSide.contains(item.name)
            let link = spoofed ? peerLink : clientLink
            var frame = TestFrame(from: family.client, leg.a.port, to: family.front, leg.port,
                                  macs: (link.mac, spoofed ? back : front), payload: Self.payload(item.name))
            item.change(&frame)
            try link.send(frame.bytes)
            usleep(20_000)
        }
        var outcome = FastPathFidelityTests.Outcome()
        // Every frame was sent 20 ms after the one before; what is coming has come well within
        // this window after the last.
        for leg in legs.values {
            for arrival in leg.b.receive(expected: cases.count, seconds: 0.4) {
                if let name = Self.name(in: arrival.bytes) { outcome.delivered.insert(name) }
            }
        }
        let ports = Set(legs.values.map(\.b.port))
        for arrival in peerLink.arrivals(for: 0.2) {
            guard let seen = TestFrame.Seen(arrival.bytes), ports.contains(seen.destinationPort),
                  let name = Self.name(in: seen.payload) else { continue }
            outcome.seen[name] = seen
            if arrival.vlan != nil { outcome.tagged.insert(name) }
        }
        if let before {
            let after = try network.kernel(relay)
            outcome.kernelDatagrams = after.datagrams - before.datagrams
            for (reason, count) in after.handedBack { outcome.handedBack[reason] = count - (before.handedBack[reason] ?? 0) }
        }
        return outcome
    }

    /// A case's payload: its name, a zero byte, then whatever the case adds.
    private static func payload(_ name: String) -> [UInt8] { Array(name.utf8) + [0] }

    private static func name(in payload: [UInt8]) -> String? {
        guard let end = payload.firstIndex(of: 0) else { return nil }
        return String(decoding: payload[..<end], as: UTF8.self)
    }
}
