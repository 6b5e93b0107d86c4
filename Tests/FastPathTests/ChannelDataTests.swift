import FastPath
import NetAddress
import XCTest

/// TURN channels in the kernel: client to peer the ChannelData header is removed and the
/// payload cut to the length it names (padding dropped); peer to client a header with the
/// channel and the payload's length is put in front. The senders here compute their own
/// checksums (offload off); with the checksum left to the kernel: ChannelDataChecksumTests.
final class ChannelDataTests: XCTestCase {
    private let channel: UInt16 = 0x4001

    func testIPv4StripAndAdd() throws { try checkStripAndAdd(ipv6: false) }

    func testIPv6StripAndAdd() throws { try checkStripAndAdd(ipv6: true) }

    /// A payload that fills the link's MTU leaves no room for the header: handed back, counted;
    /// four bytes less fits exactly and is forwarded.
    func testPayloadThatWouldPassTheMTUIsHandedBack() throws {
        for ipv6 in [false, true] {
            let (harness, fastPath) = try FastPathHarness.boundChannel(channel, ipv6: ipv6, senders: false, relay: false)
            defer { harness.remove() }
            let largest = 1500 - (ipv6 ? 40 : 20) - 8
            let full = [UInt8](repeating: 0x77, count: largest)
            try harness.peer.send(full, to: harness.relayPeerSide.local)
            XCTAssertEqual(harness.relayPeerSide.receive()?.payload.count, largest, "IPv6 \(ipv6)")
            let fits = [UInt8](repeating: 0x78, count: largest - 4)
            try harness.peer.send(fits, to: harness.relayPeerSide.local)
            XCTAssertEqual(harness.client.receive()?.payload == channelData(fits), true, "IPv6 \(ipv6)")
            XCTAssertNil(harness.client.receive(timeout: 0.05))
            XCTAssertEqual(fastPath.counters(harness.toClient)?.handedBack, [.tooLarge: 1], "IPv6 \(ipv6)")
            XCTAssertEqual(fastPath.counters(harness.toClient)?.packets, 1, "IPv6 \(ipv6)")
        }
    }

    /// One client's 5-tuple carries several channels, each to its own peer: each has its own
    /// entry (the key's channel), an unbound channel goes to user space uncounted, and a plain
    /// entry's payload that merely starts like ChannelData is still forwarded as plain.
    func testChannelsOfOneClientReachTheirOwnPeers() throws {
        for mode in [KernelFastPath.AttachMode.tc, .xdp] {
            let harness = try FastPathHarness(ipv6: false, mode: mode)
            defer { harness.remove() }
            let fastPath = try XCTUnwrap(harness.fastPath)
            try harness.triangle.setChecksumOffload(false)
            let secondPeer = try harness.triangle.inside(.peer) { try ProbeSocket(Endpoint(host: "10.71.2.2", port: 60002)!) }
            let (first, second) = (channel, channel + 1)
            let toFirst = FlowKey(source: harness.client.local, destination: harness.relayClientSide.local, channel: first)
            let toSecond = FlowKey(source: harness.client.local, destination: harness.relayClientSide.local, channel: second)
            try fastPath.put(toFirst, harness.entryToPeer(.stripChannel(first), routed: true))
            try fastPath.put(toSecond, FlowEntry(source: harness.relayPeerSide.local, destination: secondPeer.local, kind: .stripChannel(second)))
            try fastPath.put(harness.toClient, harness.entryToClient(routed: true))

            try harness.client.send(channelData([1, 1], channel: first), to: harness.relayClientSide.local)
            try harness.client.send(channelData([2, 2, 2], channel: second), to: harness.relayClientSide.local)
            try harness.client.send(channelData([3], channel: second + 1), to: harness.relayClientSide.local)
            XCTAssertEqual(harness.peer.receive()?.payload, [1, 1], "\(mode)")
            XCTAssertEqual(secondPeer.receive()?.payload, [2, 2, 2], "\(mode)")
            XCTAssertEqual(harness.relayClientSide.receive()?.payload, channelData([3], channel: second + 1), "\(mode)")
            let lookalike: [UInt8] = [0x40, 0x01, 0x00, 0x01, 9]
            try harness.peer.send(lookalike, to: harness.relayPeerSide.local)
            XCTAssertEqual(harness.client.receive()?.payload, lookalike, "\(mode)")

            XCTAssertNil(harness.peer.receive(timeout: 0.05), "\(mode)")
            XCTAssertNil(secondPeer.receive(timeout: 0.05), "\(mode)")
            for key in [toFirst, toSecond, harness.toClient] {
                XCTAssertEqual(fastPath.counters(key)?.packets, 1, "\(mode), \(key)")
                XCTAssertEqual(fastPath.counters(key)?.handedBack, [:], "\(mode), \(key)")
            }
            XCTAssertEqual(fastPath.totals.packets, 3, "\(mode)")
        }
    }

    private func checkStripAndAdd(ipv6: Bool) throws {
        let (harness, fastPath) = try FastPathHarness.boundChannel(channel, ipv6: ipv6, senders: false, relay: false)
        defer { harness.remove() }

        // Lengths 0 to 9, each with the padding to 4 that a sender may add, and ECT(1) on EF.
        var sentToPeer = 0
        for length in 0..<10 {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: 0xa0 + $0) }
            let padding = [UInt8](repeating: 0xee, count: (4 - length % 4) % 4)
            try harness.client.send(channelData(payload) + padding, to: harness.relayClientSide.local, trafficClass: 0xb9)
            let atPeer = try XCTUnwrap(harness.peer.receive(), "length \(length): nothing reached the peer; \(String(describing: fastPath.counters(harness.toPeer)))")
            XCTAssertEqual(atPeer, .init(source: harness.relayPeerSide.local, trafficClass: 0xb9, payload: payload), "length \(length)")
            sentToPeer += length
        }

        var sentToClient = 0
        for length in [0, 1, 7, 200, 1400] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: 0x30 + $0) }
            try harness.peer.send(payload, to: harness.relayPeerSide.local, trafficClass: 0x8a)
            let atClient = try XCTUnwrap(harness.client.receive(), "length \(length): nothing reached the client; \(String(describing: fastPath.counters(harness.toClient)))")
            XCTAssertEqual(atClient, .init(source: harness.relayClientSide.local, trafficClass: 0x8a, payload: channelData(payload)), "length \(length)")
            sentToClient += length
        }

        // Another channel number, and a length longer than what came: user space's to judge.
        try harness.client.send(channelData([1, 2, 3], channel: channel + 1), to: harness.relayClientSide.local)
        try harness.client.send([0x40, 0x01, 0x00, 0x09, 1, 2, 3], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, channelData([1, 2, 3], channel: channel + 1))
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, [0x40, 0x01, 0x00, 0x09, 1, 2, 3])
        XCTAssertNil(harness.peer.receive(timeout: 0.05))

        let toPeer = try XCTUnwrap(fastPath.counters(harness.toPeer))
        XCTAssertEqual(toPeer.packets, 10)
        XCTAssertEqual(toPeer.bytes, UInt64(sentToPeer))
        XCTAssertEqual(toPeer.ecnIn, [0, 10, 0, 0])
        XCTAssertEqual(toPeer.handedBack, [.malformed: 2])
        let toClient = try XCTUnwrap(fastPath.counters(harness.toClient))
        XCTAssertEqual(toClient.packets, 5)
        XCTAssertEqual(toClient.bytes, UInt64(sentToClient))
        XCTAssertEqual(toClient.ecnOut, [0, 0, 5, 0])
        XCTAssertEqual(toClient.handedBack, [:])
    }

    private func channelData(_ payload: [UInt8], channel: UInt16? = nil) -> [UInt8] {
        FastPathHarness.channelData(payload, channel: channel ?? self.channel)
    }
}
