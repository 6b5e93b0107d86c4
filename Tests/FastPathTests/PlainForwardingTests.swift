import FastPath
import NetAddress
import XCTest

/// Session legs and forward-rule clients: the kernel rewrites addresses and ports both ways and
/// sends the datagram on, with the traffic class byte as the entry's policy says, seen from the
/// peer's and the client's own sockets; with the senders' checksum offload on and off, and
/// with it on, with the relay's own off (the kernel finishes the checksum as the datagram
/// leaves the relay, and the receivers check it: UdpInCsumErrors stays) and on.
final class PlainForwardingTests: XCTestCase {
    func testIPv4BothWaysUnderEachPolicy() throws { try checkBothWays(ipv6: false) }

    func testIPv6BothWaysUnderEachPolicy() throws { try checkBothWays(ipv6: true) }

    /// An entry without an egress interface rewrites and lets the datagram go up this host's
    /// stack: here to the relay's other socket, from the new source.
    func testLocalDestinationIsDeliveredInThisHost() throws {
        let harness = try FastPathHarness(ipv6: false)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        let newSource = Endpoint(host: "10.71.1.2", port: 41000)!
        try fastPath.put(harness.toPeer, FlowEntry(source: newSource, destination: harness.relayPeerSide.local,
                                                       dscp: .value(26), egressInterface: 0))
        try harness.client.send([4, 5, 6], to: harness.relayClientSide.local, trafficClass: 0x02)
        XCTAssertEqual(harness.relayPeerSide.receive(), .init(source: newSource, trafficClass: 26 << 2 | 2, payload: [4, 5, 6]))
        XCTAssertNil(harness.relayClientSide.receive(timeout: 0.05))
        XCTAssertEqual(fastPath.counters(harness.toPeer)?.packets, 1)
    }

    /// The four ECN codepoints under mirror/copy, a class value, zero, and ecn clear; every
    /// datagram checked at the far socket (payload, source, TOS), nothing handed back, and the
    /// counters equal to what was sent.
    private func checkBothWays(ipv6: Bool) throws {
        let harness = try FastPathHarness(ipv6: ipv6)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        let policies: [(FlowEntry.DSCP, FlowEntry.ECN, expectedDSCP: UInt8, clears: Bool)] = [
            (.mirror, .copy, 10, false), (.value(46), .copy, 46, false), (.zero, .copy, 0, false), (.mirror, .clear, 10, true),
        ]
        for (senders, relay) in [(true, true), (true, false), (false, false)] {
            let offload = "senders \(senders), relay \(relay)"
            try harness.triangle.setChecksumOffload(senders: senders, relay: relay)
            let errorsBefore = try [harness.triangle.udpChecksumErrors(in: .client), harness.triangle.udpChecksumErrors(in: .peer)]
            fastPath.remove(harness.toPeer)
            fastPath.remove(harness.toClient)
            var sent = 0
            for (dscp, ecn, expectedDSCP, clears) in policies {
                try fastPath.put(harness.toPeer, harness.entryToPeer(dscp: dscp, ecn: ecn))
                try fastPath.put(harness.toClient, harness.entryToClient(dscp: dscp, ecn: ecn))
                for codepoint in UInt8(0)...3 {
                    let tos = 10 << 2 | codepoint
                    let expected = expectedDSCP << 2 | (clears ? 0 : codepoint)
                    let payload = (0..<(33 + Int(codepoint))).map { UInt8(truncatingIfNeeded: $0 &+ Int(tos)) }
                    sent += payload.count
                    let context = "offload \(offload), \(dscp)/\(ecn), TOS \(tos)"

                    try harness.client.send(payload, to: harness.relayClientSide.local, trafficClass: tos)
                    let atPeer = try XCTUnwrap(harness.peer.receive(), "nothing reached the peer: \(context); counters \(String(describing: fastPath.counters(harness.toPeer)))")
                    XCTAssertEqual(atPeer, .init(source: harness.relayPeerSide.local, trafficClass: expected, payload: payload), context)

                    try harness.peer.send(payload, to: harness.relayPeerSide.local, trafficClass: tos)
                    let atClient = try XCTUnwrap(harness.client.receive(), "nothing reached the client: \(context)")
                    XCTAssertEqual(atClient, .init(source: harness.relayClientSide.local, trafficClass: expected, payload: payload), context)
                }
            }
            XCTAssertNil(harness.relayClientSide.receive(timeout: 0.05), "a datagram was handed back (offload \(offload))")
            XCTAssertNil(harness.relayPeerSide.receive(timeout: 0.05), "a datagram was handed back (offload \(offload))")
            for key in [harness.toPeer, harness.toClient] {
                let counters = try XCTUnwrap(fastPath.counters(key))
                XCTAssertEqual(counters.packets, 16, "\(key), offload \(offload)")
                XCTAssertEqual(counters.bytes, UInt64(sent), "\(key), offload \(offload)")
                XCTAssertEqual(counters.ecnIn, [4, 4, 4, 4], "\(key), offload \(offload)")
                XCTAssertEqual(counters.ecnOut, [7, 3, 3, 3], "\(key), offload \(offload)")
                XCTAssertEqual(counters.handedBack, [:], "\(key), offload \(offload)")
            }
            let errorsAfter = try [harness.triangle.udpChecksumErrors(in: .client), harness.triangle.udpChecksumErrors(in: .peer)]
            XCTAssertEqual(errorsAfter, errorsBefore, "UDP checksum errors at the client and the peer, offload \(offload)")
        }
    }
}
