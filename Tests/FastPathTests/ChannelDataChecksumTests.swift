import FastPath
import NetAddress
import XCTest

/// TURN channels in the kernel from senders that leave the UDP checksum to the kernel
/// (transmit checksum offload on, as for every container on a relay's host: the datagrams
/// reach the relay as CHECKSUM_PARTIAL). The kernel keeps the headers where the checksum will
/// be finished and moves the payload instead. With the relay's own devices' offload off, the
/// kernel finishes each checksum as the datagram leaves the relay and the receiver checks it
/// (a wrong one is dropped and counted in UdpInCsumErrors); with it on, the datagram reaches
/// the receiver still unfinished, which a receiver on this host takes as good, so there the
/// payload and the counters show the move.
final class ChannelDataChecksumTests: XCTestCase {
    private let channel: UInt16 = 0x4002

    func testIPv4FinishedAsItLeavesTheRelay() throws { try checkEverySize(ipv6: false, relayOffload: false) }

    func testIPv6FinishedAsItLeavesTheRelay() throws { try checkEverySize(ipv6: true, relayOffload: false) }

    func testIPv4LeftToFinishToTheReceiver() throws { try checkEverySize(ipv6: false, relayOffload: true) }

    func testIPv6LeftToFinishToTheReceiver() throws { try checkEverySize(ipv6: true, relayOffload: true) }

    /// The move holds up to 9,216 payload bytes (a jumbo frame's datagram); one byte more is
    /// handed back as checksum state, both ways, on links whose MTU would carry it.
    func testPayloadBeyondTheMoveIsHandedBack() throws {
        let (harness, fastPath) = try boundChannel(ipv6: false, relayOffload: false)
        defer { harness.remove() }
        try harness.triangle.setMTU(9600)
        let largest = [UInt8](repeating: 0x5a, count: 9216)
        let beyond = [UInt8](repeating: 0x5b, count: 9217)
        let padded = channelData(beyond) + [0, 0, 0]
        try harness.client.send(channelData(largest), to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, largest)
        try harness.client.send(padded, to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, padded)
        try harness.peer.send(largest, to: harness.relayPeerSide.local)
        XCTAssertEqual(harness.client.receive()?.payload, channelData(largest))
        try harness.peer.send(beyond, to: harness.relayPeerSide.local)
        XCTAssertEqual(harness.relayPeerSide.receive()?.payload, beyond)
        for key in [harness.toPeer, harness.toClient] {
            XCTAssertEqual(fastPath.counters(key)?.packets, 1, "\(key)")
            XCTAssertEqual(fastPath.counters(key)?.handedBack, [.checksumState: 1], "\(key)")
        }
    }

    /// Payloads of 0, 1, 3, 4, 5, 100, 1200 bytes and the largest the 1500-byte MTU carries
    /// with the header, each way, ECN and DSCP kept; client to peer padded to 4 as a sender may
    /// pad. Then a peer datagram that fills the MTU, which has no room for the header.
    private func checkEverySize(ipv6: Bool, relayOffload: Bool) throws {
        let (harness, fastPath) = try boundChannel(ipv6: ipv6, relayOffload: relayOffload)
        defer { harness.remove() }
        let errorsBefore = try [harness.triangle.udpChecksumErrors(in: .client), harness.triangle.udpChecksumErrors(in: .peer)]
        let full = 1500 - (ipv6 ? 40 : 20) - 8
        let sizes = [0, 1, 3, 4, 5, 100, 1200, full - 4]
        for size in sizes {
            let context = "IPv6 \(ipv6), relay offload \(relayOffload), \(size) bytes"
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ size) }
            let padding = [UInt8](repeating: 0xee, count: (4 - size % 4) % 4)
            try harness.client.send(channelData(payload) + padding, to: harness.relayClientSide.local, trafficClass: 0xb9)
            XCTAssertEqual(harness.peer.receive(), .init(source: harness.relayPeerSide.local, trafficClass: 0xb9, payload: payload),
                           "to the peer, \(context)")
            try harness.peer.send(payload, to: harness.relayPeerSide.local, trafficClass: 0x8a)
            XCTAssertEqual(harness.client.receive(), .init(source: harness.relayClientSide.local, trafficClass: 0x8a, payload: channelData(payload)),
                           "to the client, \(context)")
        }
        let tooLarge = [UInt8](repeating: 0x33, count: full)
        try harness.peer.send(tooLarge, to: harness.relayPeerSide.local)
        XCTAssertEqual(harness.relayPeerSide.receive()?.payload, tooLarge)
        XCTAssertNil(harness.relayClientSide.receive(timeout: 0.05), "a datagram was handed back")
        XCTAssertNil(harness.relayPeerSide.receive(timeout: 0.05), "a datagram was handed back")

        let bytes = UInt64(sizes.reduce(0, +))
        let toPeer = try XCTUnwrap(fastPath.counters(harness.toPeer))
        XCTAssertEqual([toPeer.packets, toPeer.bytes, toPeer.failed], [UInt64(sizes.count), bytes, 0])
        XCTAssertEqual(toPeer.handedBack, [:])
        let toClient = try XCTUnwrap(fastPath.counters(harness.toClient))
        XCTAssertEqual([toClient.packets, toClient.bytes, toClient.failed], [UInt64(sizes.count), bytes, 0])
        XCTAssertEqual(toClient.handedBack, [.tooLarge: 1])
        let errorsAfter = try [harness.triangle.udpChecksumErrors(in: .client), harness.triangle.udpChecksumErrors(in: .peer)]
        XCTAssertEqual(errorsAfter, errorsBefore, "UDP checksum errors at the client and the peer")
    }

    /// A harness with `channel` bound both ways, the senders' checksum offload on.
    private func boundChannel(ipv6: Bool, relayOffload: Bool) throws -> (FastPathHarness, KernelFastPath) {
        try FastPathHarness.boundChannel(channel, ipv6: ipv6, senders: true, relay: relayOffload)
    }

    private func channelData(_ payload: [UInt8]) -> [UInt8] { FastPathHarness.channelData(payload, channel: channel) }
}
