import Foundation
import Glibc
@testable import LoadGen
import TestSupport
import XCTest

/// The kernel fast path through the real relay (`--fast-path tc`) between a client and a peer
/// in namespaces of their own (FastPathNetwork), seen from outside: a forward rule on IPv4 and
/// IPv6, session pairs under each marking policy, a TURN channel both ways with checksum
/// offload off and on. Each datagram's TOS byte is read where it arrives, and /v1/stats says
/// how many the kernel carried: a relay that forwarded them all in user space, or rewrote a
/// mark in the kernel, fails here.
final class FastPathRelayTests: XCTestCase {
    static let forwardPort: UInt16 = 4000
    /// DSCP EF (46) with each ECN codepoint: Not-ECT, ECT(1), ECT(0), CE.
    static let marks: [UInt8] = (0..<4).map { 46 << 2 | UInt8($0) }

    /// A client sends 50 datagrams of each mark through the rule; the upstream echoes each with
    /// the mark it arrived with. Every one arrives both ways with its TOS byte as sent, and the
    /// kernel carried all but the client's first (which made the client, and its entries).
    func testAForwardRuleIsCarriedByTheKernelWithItsMarksOnIPv4AndIPv6() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        let families = [FastPathNetwork.ipv4, FastPathNetwork.ipv6]
        let upstreams = try network.inside(.peer) { try families.map { try IndependentPeer(host: $0.peer) } }
        let rules = zip(families, upstreams).flatMap { family, upstream in
            ["--forward", "\(FastPathNetwork.Family.bracketed(family.front)):\(Self.forwardPort)="
                + "\(FastPathNetwork.Family.bracketed(family.peer)):\(upstream.port)"]
        }
        let relay = try network.startRelay(fastPath: "tc", rules)
        defer { XCTAssertEqual(relay.stop(), 0) }
        for (family, upstream) in zip(families, upstreams) {
            let client = try network.inside(.client) { try IndependentPeer(host: family.client) }
            let before = try network.kernel(relay)
            let seen = try Self.pingPong(client, to: family.front, port: Self.forwardPort, upstream, perMark: 50)
            for (index, mark) in Self.marks.enumerated() {
                XCTAssertEqual(seen.there[index], Array(repeating: mark, count: 50), "\(family.client): to the upstream, TOS \(mark)")
                XCTAssertEqual(seen.back[index], Array(repeating: mark, count: 50), "\(family.client): back to the client, TOS \(mark)")
            }
            let after = try network.kernel(relay)
            XCTAssertEqual(after.datagrams - before.datagrams, 2 * 200 - 1, "\(family.client): datagrams the kernel carried")
            XCTAssertEqual(after.handedBackTotal - before.handedBackTotal, 0, "\(family.client): handed back \(after.handedBack)")
            XCTAssertEqual(after.entries - before.entries, 2, "\(family.client): one entry each way")
            // By codepoint, both ways: the client's first datagram (Not-ECT) went through user space.
            let ecn = after.ecnSince(before)
            XCTAssertEqual(ecn.arrived, [99, 100, 100, 100], "\(family.client): the kernel's ecn_in")
            XCTAssertEqual(ecn.left, [99, 100, 100, 100], "\(family.client): the kernel's ecn_out")
        }
    }

    /// Four sessions, one per policy: the TOS byte each mark arrives with at the far end, both
    /// ways, is the policy's; the session's counters (user space's and the kernel's together)
    /// are what was sent; the kernel carried everything after the latching datagrams.
    func testSessionPairsKeepTheirPoliciesAndCountsInTheKernel() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        let relay = try network.startRelay(fastPath: "tc", [])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let policies: [(name: String, json: String, expected: (UInt8) -> UInt8)] = [
            ("dscp mirror", #"{"dscp": "mirror"}"#, { $0 }),
            ("dscp class interactiveVideo", #"{"dscp": "class", "service_class": "interactiveVideo"}"#, { 34 << 2 | $0 & 3 }),
            ("dscp zero", #"{"dscp": "zero"}"#, { $0 & 3 }),
            ("ecn clear", #"{"ecn": "clear"}"#, { $0 & 0xFC }),
        ]
        let perMark = 25
        let family = FastPathNetwork.ipv4
        let before = try network.kernel(relay)
        for policy in policies {
            let a = try network.inside(.client) { try IndependentPeer(host: family.client) }
            let b = try network.inside(.peer) { try IndependentPeer(host: family.peer) }
            let session = try network.latchedSession(relay, policy.json, a: a, b: b)
            let seen = try Self.pingPong(a, to: family.front, port: session.ports[0], b, perMark: perMark, echoing: { _, mark in mark })
            for (index, mark) in Self.marks.enumerated() {
                let expected = Array(repeating: policy.expected(mark), count: perMark)
                XCTAssertEqual(seen.there[index], expected, "\(policy.name): leg 0 to leg 1, sent TOS \(mark)")
                XCTAssertEqual(seen.back[index], expected, "\(policy.name): leg 1 to leg 0, sent TOS \(mark)")
            }
            // Each side sent its latching datagram (Not-ECT, 1 byte) and 4 x perMark of 3 bytes;
            // a's latching datagram had nowhere to go yet.
            let legs = try network.legs(relay, session: session.id)
            XCTAssertEqual(legs.count, 2, policy.name)
            let sent = 4 * perMark
            for (leg, out) in [(0, sent + 1), (1, sent)] {
                let context = "\(policy.name), leg \(leg)"
                XCTAssertEqual(RelayProcess.number(legs[leg], "packets_in"), sent + 1, context)
                XCTAssertEqual(RelayProcess.number(legs[leg], "bytes_in"), 3 * sent + 1, context)
                XCTAssertEqual(RelayProcess.number(legs[leg], "packets_out"), out, context)
                XCTAssertEqual(RelayProcess.number(legs[leg], "ecn_in", "not_ect"), perMark + 1, context)
                for name in ["ect1", "ect0", "ce"] { XCTAssertEqual(RelayProcess.number(legs[leg], "ecn_in", name), perMark, "\(context) \(name)") }
                let cleared = policy.name == "ecn clear"
                XCTAssertEqual(RelayProcess.number(legs[leg], "ecn_out", "ce"), cleared ? 0 : perMark, context)
            }
        }
        let after = try network.kernel(relay)
        XCTAssertEqual(after.datagrams - before.datagrams, policies.count * 2 * 4 * perMark, "datagrams the kernel carried")
        // Every codepoint arrived 2 x perMark times per session; "ecn clear" sent them all on Not-ECT.
        let ecn = after.ecnSince(before)
        let each = 2 * perMark
        XCTAssertEqual(ecn.arrived, Array(repeating: policies.count * each, count: 4), "the kernel's ecn_in")
        XCTAssertEqual(ecn.left, [(policies.count - 1) * each + 4 * each] + Array(repeating: (policies.count - 1) * each, count: 3),
                       "the kernel's ecn_out")
        XCTAssertEqual(after.handedBackTotal - before.handedBackTotal, 0, "handed back: \(after.handedBack)")
    }

    /// A session pair over IPv6 (legs on `::`): every mark arrives as sent both ways, and the
    /// kernel carried everything after the latching datagrams.
    func testASessionPairOnIPv6IsCarriedByTheKernel() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        let relay = try network.startRelay(fastPath: "tc", ["--relay-address", "::"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let family = FastPathNetwork.ipv6
        let a = try network.inside(.client) { try IndependentPeer(host: family.client) }
        let b = try network.inside(.peer) { try IndependentPeer(host: family.peer) }
        let session = try network.latchedSession(relay, "{}", a: a, b: b, family: family)
        let before = try network.kernel(relay)
        let seen = try Self.pingPong(a, to: family.front, port: session.ports[0], b, perMark: 20, echoing: { _, mark in mark })
        for (index, mark) in Self.marks.enumerated() {
            XCTAssertEqual(seen.there[index], Array(repeating: mark, count: 20), "leg 0 to leg 1, TOS \(mark)")
            XCTAssertEqual(seen.back[index], Array(repeating: mark, count: 20), "leg 1 to leg 0, TOS \(mark)")
        }
        let after = try network.kernel(relay)
        XCTAssertEqual(after.datagrams - before.datagrams, 2 * 4 * 20, "datagrams the kernel carried")
        XCTAssertEqual(after.handedBackTotal - before.handedBackTotal, 0, "handed back \(after.handedBack)")
    }

    /// A TURN channel both ways with 50 ChannelData of each mark, IPv4 and IPv6, with checksum
    /// offload off on the client's and peer's devices (they compute their checksums) and on
    /// (they leave them to the kernel, CHECKSUM_PARTIAL, which tc handles by moving the payload
    /// instead of the headers): either way the kernel carries them all (header taken off to the
    /// peer, put on to the client), marks kept, nothing handed back.
    func testATurnChannelGoesThroughTheKernelWhoeverComputesTheChecksum() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        let marks = Self.marks.flatMap { Array(repeating: $0, count: 50) }
        for family in [FastPathNetwork.ipv4, FastPathNetwork.ipv6] {
            let relay = try network.startRelay(fastPath: "tc", FastPathTurn.arguments(relayed: family))
            defer { XCTAssertEqual(relay.stop(), 0) }
            let allocation = try FastPathTurn.allocate(network, client: family, peers: family)
            for offload in [false, true] {
                try network.setChecksumOffload(offload)
                let context = "\(family.client), checksum offload \(offload ? "on" : "off")"
                let before = try network.kernel(relay)
                XCTAssertEqual(try allocation.relay(marks, along: .channelDataToPeer), marks, "\(context): ChannelData to the peer")
                XCTAssertEqual(try allocation.relay(marks, along: .channelDataToClient), marks, "\(context): the peer's datagrams as ChannelData")
                let after = try network.kernel(relay)
                XCTAssertEqual(after.datagrams - before.datagrams, 2 * marks.count, "\(context): datagrams the kernel carried")
                let ecn = after.ecnSince(before)
                XCTAssertEqual(ecn.arrived, Array(repeating: 100, count: 4), "\(context): the kernel's ecn_in")
                XCTAssertEqual(ecn.left, ecn.arrived, "\(context): the kernel's ecn_out")
                XCTAssertEqual(after.handedBackTotal, before.handedBackTotal, "\(context): handed back \(after.handedBack)")
            }
        }
    }

    /// For each mark in turn, `perMark` times: `a` sends a numbered datagram to `host`:`port`,
    /// `b` reads it and answers its source with a datagram marked `echoing(arrived, sent)`
    /// (the TOS it arrived with by default), which `a` reads. One at a time, so the kernel
    /// and user space each see the order a test means. The TOS bytes seen, by mark, each way;
    /// a datagram that never came is missing from its list.
    static func pingPong(_ a: IndependentPeer, to host: String, port: UInt16, _ b: IndependentPeer, perMark: Int,
                         echoing: (_ arrived: UInt8, _ sent: UInt8) -> UInt8 = { arrived, _ in arrived }) throws
        -> (there: [[UInt8]], back: [[UInt8]]) {
        var there = [[UInt8]](repeating: [], count: marks.count)
        var back = [[UInt8]](repeating: [], count: marks.count)
        for (index, mark) in marks.enumerated() {
            for number in 0..<perMark {
                let payload: [UInt8] = [0x46, UInt8(index), UInt8(number)]
                try a.send(payload, tos: mark, to: host, port: port)
                guard let arrival = b.receive(expected: 1, seconds: 2).first(where: { $0.bytes == payload }) else { continue }
                there[index].append(arrival.tos)
                try b.send(payload, tos: echoing(arrival.tos, mark), to: arrival.source)
                guard let reply = a.receive(expected: 1, seconds: 2).first(where: { $0.bytes == payload }) else { continue }
                back[index].append(reply.tos)
            }
        }
        return (there, back)
    }
}
