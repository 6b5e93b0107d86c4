import Foundation
import Glibc
@testable import LoadGen
import TestSupport
import XCTest

/// What the kernel fast path leaves to user space, through the real relay (`--fast-path tc`)
/// in namespaces (FastPathNetwork): a Send indication and a Data indication beside an
/// offloaded channel, a stranger on a latched session leg, a fragmented datagram of an
/// offloaded forward-rule client, a channel whose client and peer are of different families.
/// Each is delivered (or refused) exactly as without the fast path, and /v1/stats shows the
/// kernel did not carry it.
final class FastPathUserSpaceTests: XCTestCase {
    static let mark: UInt8 = 46 << 2 | 1

    /// A Send indication comes from the 5-tuple of the channel's entry but is no ChannelData:
    /// the kernel keys a client's entries by channel, so it matches none and goes up untouched.
    /// A Data indication's peer has a permission but no channel, so no entry. Both are
    /// delivered, and ChannelData on the same allocation is still the kernel's.
    func testIndicationsAreLeftToUserSpaceBesideAnOffloadedChannel() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        try network.setChecksumOffload(false)
        let relay = try network.startRelay(fastPath: "tc", FastPathTurn.arguments())
        defer { XCTAssertEqual(relay.stop(), 0) }
        let allocation = try FastPathTurn.allocate(network, client: FastPathNetwork.ipv4, peers: FastPathNetwork.ipv4)
        let before = try network.kernel(relay)
        XCTAssertEqual(try allocation.relay([Self.mark], along: .sendIndicationToPeer), [Self.mark], "a Send indication")
        XCTAssertEqual(try allocation.relay([Self.mark], along: .dataIndicationToClient), [Self.mark], "a Data indication")
        let between = try network.kernel(relay)
        XCTAssertEqual(between.datagrams, before.datagrams, "the kernel carried an indication")
        XCTAssertEqual(between.handedBack, before.handedBack, "the indications matched no entry")
        XCTAssertEqual(try allocation.relay([Self.mark], along: .channelDataToPeer), [Self.mark], "ChannelData")
        XCTAssertEqual(try network.kernel(relay).datagrams - between.datagrams, 1, "ChannelData beside the indications")
    }

    /// Once a session's pair is the kernel's, a datagram from another source to a latched leg
    /// misses the kernel's entries, reaches the worker, and is dropped there as a hijack.
    func testAStrangerOnALatchedLegIsNotForwarded() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        let relay = try network.startRelay(fastPath: "tc", [])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let family = FastPathNetwork.ipv4
        let (a, stranger) = try network.inside(.client) { (try IndependentPeer(host: family.client), try IndependentPeer(host: family.client)) }
        let b = try network.inside(.peer) { try IndependentPeer(host: family.peer) }
        let session = try network.latchedSession(relay, "{}", a: a, b: b)
        let before = try network.kernel(relay)
        try stranger.send([0x66], tos: Self.mark, to: family.front, port: session.ports[0])
        let legs = try network.inside(.relay) {
            try relay.waitFor("/v1/sessions/\(session.id)") { object in
                RelayProcess.number((object["legs"] as? [[String: Any]])?.first ?? [:], "drops", "hijack") == 1
            }
        }["legs"] as? [[String: Any]] ?? []
        XCTAssertEqual(RelayProcess.number(legs.first ?? [:], "drops", "hijack"), 1, "\(legs)")
        XCTAssertEqual(b.receive(expected: 1, seconds: 0.5).map(\.bytes), [], "the stranger's datagram was forwarded")
        XCTAssertEqual(try network.kernel(relay).datagrams, before.datagrams, "the kernel carried the stranger's datagram")
        try a.send([0x61], tos: Self.mark, to: family.front, port: session.ports[0])
        XCTAssertEqual(b.receive(expected: 1).map(\.bytes), [[0x61]], "the latched peer's datagram after it")
        XCTAssertEqual(try network.kernel(relay).datagrams - before.datagrams, 1)
    }

    /// A forward-rule client the kernel carries sends a datagram longer than the link's MTU:
    /// its first fragment matches the client's entry and is handed back as `fragment`, the
    /// relay's socket gets it reassembled and forwards it; so for the upstream's answer.
    func testAFragmentedDatagramOfAnOffloadedClientIsDeliveredByUserSpace() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        let family = FastPathNetwork.ipv4
        let upstream = try network.inside(.peer) { try IndependentPeer(host: family.peer) }
        let relay = try network.startRelay(fastPath: "tc", ["--forward", "\(family.front):4000=\(family.peer):\(upstream.port)"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let client = try network.inside(.client) { try IndependentPeer(host: family.client) }
        let small = try FastPathRelayTests.pingPong(client, to: family.front, port: 4000, upstream, perMark: 1)
        XCTAssertEqual(small.back.map(\.count), [1, 1, 1, 1], "the client's first datagrams")
        let before = try network.kernel(relay)
        XCTAssertEqual(before.entries, 2, "the client's entries")
        let large = (0..<1600).map { UInt8(truncatingIfNeeded: $0) }
        try client.send(large, tos: Self.mark, to: family.front, port: 4000)
        let there = try XCTUnwrap(upstream.receive(expected: 1).first, "the fragmented datagram never reached the upstream")
        XCTAssertEqual(there.bytes, large)
        XCTAssertEqual(there.tos, Self.mark)
        try upstream.send(large, tos: Self.mark, to: there.source)
        let back = try XCTUnwrap(client.receive(expected: 1).first, "the upstream's fragmented answer never reached the client")
        XCTAssertEqual(back.bytes, large)
        XCTAssertEqual(back.tos, Self.mark)
        let after = try network.kernel(relay)
        XCTAssertEqual(after.datagrams, before.datagrams, "the kernel carried a fragment")
        XCTAssertEqual(after.handedBack("fragment") - before.handedBack("fragment"), 2, "\(after.handedBack)")
    }

    /// A client over IPv6 with an IPv4 relayed address and peer: the kernel cannot rewrite
    /// one family into the other, so it refuses the channel's entries (counted), and user
    /// space carries the channel both ways with its marks.
    func testACrossFamilyChannelIsRefusedByTheKernelAndDeliveredByUserSpace() throws {
        let network = try FastPathNetwork()
        defer { network.remove() }
        try network.setChecksumOffload(false)
        let relay = try network.startRelay(fastPath: "tc", FastPathTurn.arguments())
        defer { XCTAssertEqual(relay.stop(), 0) }
        let before = try network.kernel(relay)
        let allocation = try FastPathTurn.allocate(network, client: FastPathNetwork.ipv6, peers: FastPathNetwork.ipv4)
        let after = try network.kernel(relay)
        XCTAssertGreaterThan(after.refusals, before.refusals, "the kernel took a cross-family channel")
        XCTAssertEqual(after.entries, before.entries, "entries of a cross-family channel")
        let marks = FastPathRelayTests.marks
        XCTAssertEqual(try allocation.relay(marks, along: .channelDataToPeer), marks, "ChannelData from an IPv6 client to an IPv4 peer")
        XCTAssertEqual(try allocation.relay(marks, along: .channelDataToClient), marks, "an IPv4 peer's datagrams to an IPv6 client")
        XCTAssertEqual(try network.kernel(relay).datagrams, after.datagrams, "the kernel carried a cross-family channel")
    }
}
