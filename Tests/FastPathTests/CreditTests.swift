import FastPath
import NetAddress
import XCTest

/// A credited entry forwards only the datagrams its credit covers, by their size as sent on,
/// and hands the rest to user space, counted as `.credit`. The credit starts at zero, is
/// granted and read back through memory shared with the kernel, and survives a replacement.
final class CreditTests: XCTestCase {
    func testExactlyTheDatagramsCoveredGoThroughTheKernel() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, credited: true))
        let payload = [UInt8](repeating: 0x61, count: 100)

        try harness.client.send(payload, to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, payload, "no credit granted yet")

        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 350), 0)
        for number in 0..<5 {
            var datagram = payload
            datagram[0] = UInt8(number)
            try harness.client.send(datagram, to: harness.relayClientSide.local)
            let arrival = number < 3 ? harness.peer.receive() : harness.relayClientSide.receive()
            XCTAssertEqual(arrival?.payload, datagram, "datagram \(number): \(number < 3 ? "covered" : "not covered")")
        }
        XCTAssertNil(harness.peer.receive(timeout: 0.05))
        XCTAssertNil(harness.relayClientSide.receive(timeout: 0.05))
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 0), 50)
        let counters = try XCTUnwrap(fastPath.counters(harness.toPeer))
        XCTAssertEqual(counters.packets, 3)
        XCTAssertEqual(counters.handedBack, [.credit: 3])
    }

    /// Peer to client, the size charged includes the ChannelData header the kernel adds.
    func testAddedChannelHeaderIsCharged() throws {
        let harness = try FastPathHarness(ipv6: true)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try harness.triangle.setChecksumOffload(false)
        try fastPath.put(harness.toClient, harness.entryToClient(.addChannel(0x4003), routed: true, credited: true))
        XCTAssertEqual(fastPath.exchangeCredit(harness.toClient, 250), 0)
        let payload = [UInt8](repeating: 0x62, count: 96)
        for _ in 0..<3 { try harness.peer.send(payload, to: harness.relayPeerSide.local) }
        XCTAssertEqual(harness.client.receive()?.payload.count, 100)
        XCTAssertEqual(harness.client.receive()?.payload.count, 100)
        XCTAssertEqual(harness.relayPeerSide.receive()?.payload, payload)
        XCTAssertEqual(fastPath.exchangeCredit(harness.toClient, 0), 50)
        XCTAssertEqual(fastPath.counters(harness.toClient)?.handedBack, [.credit: 1])
    }

    /// A replacement keeps the credit; a removed entry has none to exchange; an entry that is
    /// not credited forwards whatever its credit says. (A new entry in a freed place starting
    /// at zero: EntryTableTests.)
    func testCreditAcrossReplacementAndRemoval() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, credited: true))
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 1000), 0)
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true, credited: true))
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 1000), 1000)
        fastPath.remove(harness.toPeer)
        XCTAssertNil(fastPath.exchangeCredit(harness.toPeer, 1))

        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true))
        try harness.client.send([1, 2], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [1, 2])
        XCTAssertEqual(fastPath.exchangeCredit(harness.toPeer, 0), 0, "an entry that is not credited takes nothing")
    }
}
