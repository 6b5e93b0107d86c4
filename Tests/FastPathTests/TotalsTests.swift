import FastPath
import NetAddress
import XCTest

/// The program-wide totals: every datagram that matched an entry since the load, forwarded or
/// handed back, equal to the sum of the entries' own counters, and kept when an entry goes.
final class TotalsTests: XCTestCase {
    func testTotalsEqualTheSumOfTheEntriesAndOutliveThem() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        XCTAssertEqual(fastPath.totals, FlowCounters())
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true))
        try fastPath.put(harness.toClient, harness.entryToClient(routed: true, credited: true))
        _ = fastPath.exchangeCredit(harness.toClient, 10)

        for (number, tos) in [UInt8(0x01), 0x02, 0x03].enumerated() {
            try harness.client.send([UInt8(number), 1, 2], to: harness.relayClientSide.local, trafficClass: tos)
            XCTAssertEqual(harness.peer.receive()?.payload, [UInt8(number), 1, 2])
        }
        let stun: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42] + [UInt8](repeating: 7, count: 12)
        try harness.client.send(stun, to: harness.relayClientSide.local)
        XCTAssertEqual(harness.relayClientSide.receive()?.payload, stun)
        for number in UInt8(0)..<3 {
            try harness.peer.send([number, 9, 9, 9], to: harness.relayPeerSide.local)
            let arrival = number < 2 ? harness.client.receive() : harness.relayPeerSide.receive()
            XCTAssertEqual(arrival?.payload, [number, 9, 9, 9], "datagram \(number) to the client (credit covers two)")
        }

        let toPeer = try XCTUnwrap(fastPath.counters(harness.toPeer))
        let toClient = try XCTUnwrap(fastPath.counters(harness.toClient))
        XCTAssertEqual(toPeer.packets + toClient.packets, 5)
        XCTAssertEqual(fastPath.totals, toPeer + toClient)
        XCTAssertEqual(fastPath.totals.handedBack, [.stun: 1, .credit: 1])

        fastPath.remove(harness.toPeer)
        fastPath.remove(harness.toClient)
        XCTAssertEqual(fastPath.totals, toPeer + toClient, "removed entries stay in the totals")
    }
}
