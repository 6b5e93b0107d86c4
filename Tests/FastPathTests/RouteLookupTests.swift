import FastPath
import NetAddress
import TestSupport
import XCTest

/// Entries without an egress interface: the kernel looks the route up for the rewritten
/// addresses. Across veth it sends the datagram out of the route's device to the neighbour;
/// to an address of this host (on `lo`) it delivers it up the stack; with no route it hands
/// the datagram back, counted as `.noRoute`.
final class RouteLookupTests: XCTestCase {
    func testIPv4BothWaysAcrossVethByRoute() throws { try checkBothWaysByRoute(ipv6: false) }

    func testIPv6BothWaysAcrossVethByRoute() throws { try checkBothWaysByRoute(ipv6: true) }

    /// Both ends on this host's loopback: the rewritten datagram goes up the stack to the
    /// peer's socket, from the relay's other address.
    func testLocalDestinationOnLoopbackByRoute() throws {
        for ipv6 in [false, true] {
            let harness = try FastPathHarness(ipv6: ipv6)
            defer { harness.remove() }
            let fastPath = try XCTUnwrap(harness.fastPath)
            let host = ipv6 ? "::1" : "127.0.0.1"
            let (client, relayIn, relayOut, peer) = try harness.triangle.inside(.relay) {
                try fastPath.attach(interface: "lo")
                return (try ProbeSocket(Endpoint(host: host, port: 40100)!), try ProbeSocket(Endpoint(host: host, port: 3478)!),
                        try ProbeSocket(Endpoint(host: host, port: 50100)!), try ProbeSocket(Endpoint(host: host, port: 60100)!))
            }
            let key = FlowKey(source: client.local, destination: relayIn.local)
            try fastPath.put(key, FlowEntry(source: relayOut.local, destination: peer.local, dscp: .value(46)))
            for (index, codepoint) in [UInt8(0), 1, 2, 3].enumerated() {
                let payload = [UInt8](repeating: UInt8(index), count: 20 + index)
                try client.send(payload, to: relayIn.local, trafficClass: 10 << 2 | codepoint)
                XCTAssertEqual(peer.receive(), .init(source: relayOut.local, trafficClass: 46 << 2 | codepoint, payload: payload),
                               "IPv6 \(ipv6), ECN \(codepoint); counters \(String(describing: fastPath.counters(key)))")
            }
            XCTAssertNil(relayIn.receive(timeout: 0.05), "IPv6 \(ipv6)")
            XCTAssertEqual(fastPath.counters(key)?.packets, 4, "IPv6 \(ipv6)")
            XCTAssertEqual(fastPath.counters(key)?.handedBack, [:], "IPv6 \(ipv6)")
        }
    }

    /// A destination the relay's namespace has no route to, and one it has a route to nowhere
    /// (unreachable): handed back unmodified to the relay's socket, counted.
    func testNoRouteIsHandedBack() throws {
        for ipv6 in [false, true] {
            let harness = try FastPathHarness(ipv6: ipv6)
            defer { harness.remove() }
            let fastPath = try XCTUnwrap(harness.fastPath)
            let (nowhere, unreachable) = ipv6 ? ("fd99::1", "fd98::1") : ("10.99.0.1", "10.98.0.1")
            try harness.triangle.inside(.relay) {
                _ = try Command.check(["ip", ipv6 ? "-6" : "-4", "route", "add", "unreachable", ipv6 ? "fd98::/64" : "10.98.0.0/24"])
            }
            for (number, destination) in [nowhere, unreachable].enumerated() {
                try fastPath.put(harness.toPeer, FlowEntry(source: harness.relayPeerSide.local, destination: Endpoint(host: destination, port: 9)!))
                try harness.client.send([UInt8(number)], to: harness.relayClientSide.local, trafficClass: 0x01)
                XCTAssertEqual(harness.relayClientSide.receive(), .init(source: harness.client.local, trafficClass: 0x01, payload: [UInt8(number)]),
                               "IPv6 \(ipv6), to \(destination)")
                XCTAssertEqual(fastPath.counters(harness.toPeer)?.handedBack, [.noRoute: UInt64(number + 1)], "IPv6 \(ipv6), to \(destination)")
            }
            XCTAssertEqual(fastPath.counters(harness.toPeer)?.packets, 0, "IPv6 \(ipv6)")
        }
    }

    /// Each kind both ways with the route looked up by the kernel, the senders' checksum
    /// offload off (channels) so that nothing is handed back for checksum state.
    private func checkBothWaysByRoute(ipv6: Bool) throws {
        let harness = try FastPathHarness(ipv6: ipv6)
        defer { harness.remove() }
        let fastPath = try XCTUnwrap(harness.fastPath)
        try harness.triangle.setChecksumOffload(false)
        try fastPath.put(harness.toPeer, harness.entryToPeer(routed: true))
        try fastPath.put(harness.toClient, harness.entryToClient(routed: true))
        try harness.client.send([1, 2, 3], to: harness.relayClientSide.local, trafficClass: 0xb9)
        XCTAssertEqual(harness.peer.receive(), .init(source: harness.relayPeerSide.local, trafficClass: 0xb9, payload: [1, 2, 3]),
                       "counters \(String(describing: fastPath.counters(harness.toPeer)))")
        try harness.peer.send([4, 5], to: harness.relayPeerSide.local, trafficClass: 0x2a)
        XCTAssertEqual(harness.client.receive(), .init(source: harness.relayClientSide.local, trafficClass: 0x2a, payload: [4, 5]),
                       "counters \(String(describing: fastPath.counters(harness.toClient)))")

        let channel: UInt16 = 0x4002
        try fastPath.put(harness.toPeer, harness.entryToPeer(.stripChannel(channel), routed: true))
        try fastPath.put(harness.toClient, harness.entryToClient(.addChannel(channel), routed: true))
        try harness.client.send([0x40, 0x02, 0x00, 0x03, 7, 8, 9, 0], to: harness.relayClientSide.local)
        XCTAssertEqual(harness.peer.receive()?.payload, [7, 8, 9])
        try harness.peer.send([6, 6], to: harness.relayPeerSide.local)
        XCTAssertEqual(harness.client.receive()?.payload, [0x40, 0x02, 0x00, 0x02, 6, 6])

        XCTAssertNil(harness.relayClientSide.receive(timeout: 0.05))
        XCTAssertNil(harness.relayPeerSide.receive(timeout: 0.05))
        for key in [harness.toPeer, harness.toClient] {
            XCTAssertEqual(fastPath.counters(key)?.packets, 2, "\(key)")
            XCTAssertEqual(fastPath.counters(key)?.handedBack, [:], "\(key)")
        }
    }
}
