import FastPath
import NetAddress
import XCTest

/// A packet-credited entry forwards only as many datagrams as its packet credit allows and
/// hands the rest to user space, counted as `.credit`; with the byte credit as well, a
/// datagram goes through only when both cover it, and one that either refuses takes nothing
/// from the other. Both credits start at zero and survive a replacement.
final class PacketCreditTests: XCTestCase {
    func testExactlyTheGrantedNumberGoesThroughTheKernel() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, packetCredited: true))
        let payload = [UInt8](repeating: 0x61, count: 100)

        try harness.client.send(payload, to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, payload, "no packet credit granted yet")

        XCTAssertEqual(fastPath.exchangePacketCredit(harness.toPeer, 3), 0)
        try sendFive(payload, harness, covered: 3)
        XCTAssertEqual(fastPath.exchangePacketCredit(harness.toPeer, 0), 0)
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 0), 0, "a byte credit the entry does not carry is left alone")
        let counters = try XCTUnwrap(fastPath.counters(harness.toPeer))
        XCTAssertEqual(counters.packets, 3)
        XCTAssertEqual(counters.handedBack, [.credit: 3])
    }

    /// The byte credit runs out first: the packets it refused are not taken off the packet
    /// credit.
    func testBytesShortTakeNoPackets() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, credited: true, packetCredited: true))
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 250), 0)
        XCTAssertEqual(fastPath.exchangePacketCredit(harness.toPeer, 10), 0)
        try sendFive([UInt8](repeating: 0x62, count: 100), harness, covered: 2)
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 0), 50)
        XCTAssertEqual(fastPath.exchangePacketCredit(harness.toPeer, 0), 8)
        XCTAssertEqual(fastPath.counters(harness.toPeer)?.handedBack, [.credit: 3])
    }

    /// The packet credit runs out first: the bytes of the datagrams it refused are given back
    /// to the byte credit. Peer to client, so the bytes charged include the added header.
    func testPacketsShortGiveTheBytesBack() throws {
        let harness = try FastPathHarness(ipv6: true)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try harness.triangle.setChecksumOffload(false)
        try fastPath.put(harness.toClient, harness.entryToClient(.addChannel(0x4003), routed: true, credited: true,
                                                                 packetCredited: true))
        XCTAssertEqual(fastPath.exchangeCredit(harness.toClient, 1000), 0)
        XCTAssertEqual(fastPath.exchangePacketCredit(harness.toClient, 2), 0)
        let payload = [UInt8](repeating: 0x63, count: 96)
        for _ in 0..<4 { try harness.peer.send(payload, to: harness.relayPeerSide.local) }
        XCTAssertEqual(harness.client.receive()?.payload.count, 100)
        XCTAssertEqual(harness.client.receive()?.payload.count, 100)
        XCTAssertEqual(harness.relayPeerSide.receive()?.payload, payload)
        XCTAssertEqual(harness.relayPeerSide.receive()?.payload, payload)
        XCTAssertNil(harness.client.receive(timeout: 0.05))
        XCTAssertEqual(fastPath.exchangeCredit(harness.toClient, 0), 800)
        XCTAssertEqual(fastPath.exchangePacketCredit(harness.toClient, 0), 0)
        XCTAssertEqual(fastPath.counters(harness.toClient)?.handedBack, [.credit: 2])
    }

    /// A replacement keeps the packet credit; a removed entry has none to exchange; an entry
    /// that is not packet-credited forwards whatever its packet credit says.
    func testPacketCreditAcrossReplacementAndRemoval() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, packetCredited: true))
        XCTAssertEqual(fastPath.exchangePacketCredit(harness.toPeer, 7), 0)
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, packetCredited: true))
        XCTAssertEqual(fastPath.exchangePacketCredit(harness.toPeer, 7), 7)
        fastPath.remove(harness.toPeer)
        XCTAssertNil(fastPath.exchangePacketCredit(harness.toPeer, 1))

        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, credited: true))
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 10), 0)
        try harness.client.send([1, 2], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [1, 2])
        XCTAssertEqual(fastPath.exchangePacketCredit(harness.toPeer, 0), 0, "an entry that is not packet-credited takes none")
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 0), 8)
    }

    /// Five numbered datagrams from the client: the first `covered` reach the peer through the
    /// kernel, the rest the relay's socket, and nothing else arrives.
    private func sendFive(_ payload: [UInt8], _ harness: FastPathHarness, covered: Int) throws {
        for number in 0..<5 {
            var datagram = payload
            datagram[0] = UInt8(number)
            try harness.client.send(datagram, to: harness.relayClientSide.local)
            let arrival = number < covered ? harness.peer.receive() : harness.relayClientSide.receive()
            XCTAssertEqual(arrival?.payload, datagram, "datagram \(number): \(number < covered ? "covered" : "not covered")")
        }
        XCTAssertNil(harness.peer.receive(timeout: 0.05))
        XCTAssertNil(harness.relayClientSide.receive(timeout: 0.05))
    }
}
