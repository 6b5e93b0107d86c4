import FastPath
import NetAddress
import SystemSupport
import XCTest

/// The XDP program on the relay's veth devices (native mode; the client's and the peer's
/// devices with GRO on, so that veth delivers what XDP redirects): the same entries forwarded
/// the same way as by tc, the Ethernet addresses from the route lookup, and the same
/// hand-backs, both ways. The senders compute their own checksums (offload off) except where
/// a test says otherwise: XDP hands back a datagram whose checksum the kernel was left to
/// finish. Where a driver has no native XDP (`lo`), attaching says so in one line naming the
/// interface.
final class XDPTests: XCTestCase {
    func testIPv4PlainBothWaysUnderEachPolicy() throws { try checkPlainBothWays(ipv6: false) }

    func testIPv6PlainBothWaysUnderEachPolicy() throws { try checkPlainBothWays(ipv6: true) }

    func testIPv4ChannelStripAndAdd() throws { try checkChannel(ipv6: false) }

    func testIPv6ChannelStripAndAdd() throws { try checkChannel(ipv6: true) }

    /// Unknown sources, a STUN message, no credit (bytes, then packets), an idle flow and an
    /// expired entry all reach the relay's own sockets unmodified, from either side.
    func testHandBacksBothWays() throws {
        let harness = try FastPathHarness(ipv6: false, mode: .xdp)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try harness.triangle.setChecksumOffload(false)
        let stranger = try harness.triangle.inside(.peer) { try ProbeSocket(Endpoint(host: "10.71.2.2", port: 60001)!) }
        try stranger.send([5], to: harness.relayPeerSide.local)
        XCTAssertEqual(harness.relayPeerSide.receive()?.payload, [5], "unknown source")

        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, credited: true, packetCredited: true))
        try fastPath.put(harness.toClient, harness.entryToClient(routed: true, expiresAt: MonotonicClock.now() + MonotonicClock.nanoseconds(0.3)))
        let stun: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42] + [UInt8](repeating: 1, count: 12)
        try harness.client.send(stun, to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, stun, "STUN")
        try harness.client.send([1, 1], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, [1, 1], "no credit")
        _ = fastPath.exchangeCredit(harness.toPeer, 4)
        try harness.client.send([1, 2], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, [1, 2], "no packet credit")
        _ = fastPath.exchangePacketCredit(harness.toPeer, 1)
        try harness.client.send([2, 2], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [2, 2], "credit granted")
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 0), 2, "the bytes of the datagram without packet credit given back")

        try harness.peer.send([3], to: harness.relayPeerSide.local)
        XCTAssertEqual(harness.client.receive()?.payload, [3], "before the expiry")
        MonotonicClock.sleep(until: MonotonicClock.now() + MonotonicClock.nanoseconds(0.35))
        try harness.peer.send([4], to: harness.relayPeerSide.local)
        XCTAssertEqual(harness.relayPeerSide.receive()?.payload, [4], "after the expiry")

        try fastPath.put(harness.toClient, harness.entryToClient(routed: true, idleTimeout: MonotonicClock.nanoseconds(0.2)))
        MonotonicClock.sleep(until: MonotonicClock.now() + MonotonicClock.nanoseconds(0.3))
        try harness.peer.send([6], to: harness.relayPeerSide.local)
        XCTAssertEqual(harness.relayPeerSide.receive()?.payload, [6], "idle")

        XCTAssertNil(harness.client.receive(timeout: 0.05))
        XCTAssertNil(harness.peer.receive(timeout: 0.05))
        XCTAssertEqual(fastPath.counters(harness.toPeer)?.handedBack, [.stun: 1, .credit: 2])
        XCTAssertEqual(fastPath.counters(harness.toClient)?.handedBack, [.expired: 1, .idle: 1])
        XCTAssertEqual(fastPath.totals.packets, 2)
    }

    /// A destination in this host: rewritten and passed up the stack (XDP_PASS) to the
    /// relay's other socket, from the new source.
    func testLocalDestinationIsPassedUpTheStack() throws {
        let harness = try FastPathHarness(ipv6: true, mode: .xdp)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try harness.triangle.setChecksumOffload(false)
        let newSource = Endpoint(host: "fd71:1::2", port: 41000)!
        try fastPath.put(harness.toPeer, FlowEntry(source: newSource, destination: harness.relayPeerSide.local, dscp: .zero))
        try harness.client.send([4, 5, 6], to: harness.relayClientSide.local, trafficClass: 0xbb)
        XCTAssertEqual(harness.relayPeerSide.receive(), .init(source: newSource, trafficClass: 0x03, payload: [4, 5, 6]))
        XCTAssertNil(harness.relayClientSide.receive(timeout: 0.05))
        XCTAssertEqual(fastPath.counters(harness.toPeer)?.packets, 1)
    }

    /// Senders with checksum offload on leave the UDP checksum to the kernel; XDP cannot see
    /// that state, so it knows such a datagram by its checksum field (the pseudo-header's sum
    /// only) and hands it back, both ways, plain and channel alike.
    func testChecksumLeftToTheKernelIsHandedBack() throws {
        for ipv6 in [false, true] {
            let harness = try FastPathHarness(ipv6: ipv6, mode: .xdp)
            defer { harness.remove() }
            let fastPath = try XCTUnwrap(harness.fastPath)
            try harness.triangle.setChecksumOffload(true)
            try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true))
            try fastPath.put(harness.toClient, harness.entryToClient(.addChannel(0x4006), routed: true))
            try harness.client.send([1, 2, 3], to: harness.relayClientSide.local, trafficClass: 0x02)
            XCTAssertEqual(harness.relayClientSide.receive(), .init(source: harness.client.local, trafficClass: 0x02, payload: [1, 2, 3]), "IPv6 \(ipv6)")
            try harness.peer.send([4, 5], to: harness.relayPeerSide.local)
            XCTAssertEqual(harness.relayPeerSide.receive()?.payload, [4, 5], "IPv6 \(ipv6)")
            XCTAssertNil(harness.peer.receive(timeout: 0.05))
            XCTAssertNil(harness.client.receive(timeout: 0.05))
            XCTAssertEqual(fastPath.counters(harness.toPeer)?.handedBack, [.checksumState: 1], "IPv6 \(ipv6)")
            XCTAssertEqual(fastPath.counters(harness.toClient)?.handedBack, [.checksumState: 1], "IPv6 \(ipv6)")
        }
    }

    /// `lo` has no native XDP: one line that names it; an interface with the tc program
    /// cannot take the XDP one too.
    func testRefusalsNameTheInterface() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try harness.triangle.inside(.relay) {
            XCTAssertThrowsError(try fastPath.attach(interface: "lo", mode: .xdp)) { error in
                XCTAssertTrue("\(error)".contains("lo does not take a native XDP program"), "\(error)")
                XCTAssertFalse("\(error)".contains("\n"), "\(error)")
            }
            XCTAssertThrowsError(try fastPath.attach(interface: "rc", mode: .xdp)) { error in
                XCTAssertTrue("\(error)".contains("rc already has the tc program"), "\(error)")
            }
        }
        XCTAssertEqual(fastPath.attachments.map(\.interface), ["rc", "rp"])
    }

    /// Every ECN codepoint under mirror and a class value, both ways, seen at the far sockets.
    private func checkPlainBothWays(ipv6: Bool) throws {
        let harness = try FastPathHarness(ipv6: ipv6, mode: .xdp)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try harness.triangle.setChecksumOffload(false)
        var sent = 0
        for (dscp, expectedDSCP) in [(FlowEntry.DSCP.mirror, UInt8(10)), (.value(46), 46)] {
            try fastPath.put(harness.toPeer, harness.entryToPeer(dscp: dscp, routed: true))
            try fastPath.put(harness.toClient, harness.entryToClient(dscp: dscp, routed: true))
            for codepoint in UInt8(0)...3 {
                let tos = 10 << 2 | codepoint
                let payload = (0..<(40 + Int(codepoint))).map { UInt8(truncatingIfNeeded: $0 &+ Int(tos)) }
                sent += payload.count
                let context = "IPv6 \(ipv6), \(dscp), TOS \(tos)"
                try harness.client.send(payload, to: harness.relayClientSide.local, trafficClass: tos)
                XCTAssertEqual(harness.peer.receive(), .init(source: harness.relayPeerSide.local, trafficClass: expectedDSCP << 2 | codepoint, payload: payload),
                               "\(context); \(String(describing: fastPath.counters(harness.toPeer)))")
                try harness.peer.send(payload, to: harness.relayPeerSide.local, trafficClass: tos)
                XCTAssertEqual(harness.client.receive(), .init(source: harness.relayClientSide.local, trafficClass: expectedDSCP << 2 | codepoint, payload: payload),
                               "\(context); \(String(describing: fastPath.counters(harness.toClient)))")
            }
        }
        XCTAssertNil(harness.relayClientSide.receive(timeout: 0.05))
        XCTAssertNil(harness.relayPeerSide.receive(timeout: 0.05))
        for key in [harness.toPeer, harness.toClient] {
            let counters = try XCTUnwrap(fastPath.counters(key))
            XCTAssertEqual(counters.packets, 8, "\(key)")
            XCTAssertEqual(counters.bytes, UInt64(sent), "\(key)")
            XCTAssertEqual(counters.ecnOut, [2, 2, 2, 2], "\(key)")
            XCTAssertEqual(counters.handedBack, [:], "\(key)")
        }
    }

    /// ChannelData lengths 0 to 9 with their padding client to peer; payloads up to 1400 bytes
    /// peer to client, and one that would pass the MTU once the header is added handed back.
    private func checkChannel(ipv6: Bool) throws {
        let harness = try FastPathHarness(ipv6: ipv6, mode: .xdp)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try harness.triangle.setChecksumOffload(false)
        let channel: UInt16 = 0x4005
        try fastPath.put(harness.toPeer, harness.entryToPeer(.stripChannel(channel), routed: true))
        try fastPath.put(harness.toClient, harness.entryToClient(.addChannel(channel), routed: true))
        func channelData(_ payload: [UInt8]) -> [UInt8] {
            [UInt8(channel >> 8), UInt8(channel & 0xff), UInt8(payload.count >> 8), UInt8(payload.count & 0xff)] + payload
        }
        for length in 0..<10 {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: 0xa0 + $0) }
            let padding = [UInt8](repeating: 0xee, count: (4 - length % 4) % 4)
            try harness.client.send(channelData(payload) + padding, to: harness.relayClientSide.local, trafficClass: 0xb9)
            XCTAssertEqual(harness.peer.receive(), .init(source: harness.relayPeerSide.local, trafficClass: 0xb9, payload: payload),
                           "IPv6 \(ipv6), length \(length); \(String(describing: fastPath.counters(harness.toPeer)))")
        }
        for length in [0, 1, 7, 200, 1400] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: 0x30 + $0) }
            try harness.peer.send(payload, to: harness.relayPeerSide.local, trafficClass: 0x8a)
            XCTAssertEqual(harness.client.receive(), .init(source: harness.relayClientSide.local, trafficClass: 0x8a, payload: channelData(payload)),
                           "IPv6 \(ipv6), length \(length); \(String(describing: fastPath.counters(harness.toClient)))")
        }
        let full = [UInt8](repeating: 0x77, count: 1500 - (ipv6 ? 40 : 20) - 8)
        try harness.peer.send(full, to: harness.relayPeerSide.local)
        XCTAssertEqual(harness.relayPeerSide.receive()?.payload.count, full.count, "IPv6 \(ipv6): too large")
        XCTAssertNil(harness.relayClientSide.receive(timeout: 0.05))
        XCTAssertEqual(fastPath.counters(harness.toPeer)?.packets, 10)
        XCTAssertEqual(fastPath.counters(harness.toClient)?.packets, 5)
        XCTAssertEqual(fastPath.counters(harness.toClient)?.handedBack, [.tooLarge: 1])
    }
}
