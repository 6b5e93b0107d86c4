import DatagramEngine
import Foundation
@testable import LoadGen
import NetAddress
import STUN
import TestPorts
import TestSupport
import XCTest

/// The TURN peer policy through the executable, as a hostile client meets it: the default
/// policy (no `--turn-allowed-peer`) refuses internal and the relay's own addresses by every
/// request that names a peer, IPv6 forms that embed an IPv4 address are judged as it, and a
/// relayed port of one family is never reachable under the other family's address.
final class TurnPeerPolicyTests: XCTestCase {
    private func ep(_ text: String) -> Endpoint { Endpoint(parsing: text)! }

    /// Peers refused by the default list, with the reason counted; 127.0.0.2 is the relay
    /// address here, so 127.0.0.1 is only loopback, as it would be on a public relay.
    private let internalPeers: [(String, PeerReason)] = [
        ("127.0.0.1:9", .loopback), ("127.1.2.3:9", .loopback), ("[::ffff:127.0.0.1]:9", .loopback),
        ("[64:ff9b::7f00:1]:9", .loopback), ("[2002:7f00:1::1]:9", .loopback),
        ("[2001:0:4136:e378:8000:63bf:80ff:fffe]:9", .loopback), ("0.0.0.0:9", .unspecified), ("[::]:9", .unspecified),
        ("169.254.169.254:80", .linkLocal), ("10.0.0.1:9", .privateNetwork), ("100.64.0.1:9", .privateNetwork),
        ("224.0.0.1:9", .multicast), ("255.255.255.255:9", .broadcast),
    ]

    enum PeerReason: String {
        case loopback, unspecified, multicast, broadcast, linkLocal = "link_local", privateNetwork = "private", relaySocket = "relay_socket"
    }

    func testTheDefaultPolicyRefusesInternalAndOwnPeersByEveryRequest() throws {
        try IPv6Loopback.require()  // IPv6 allocations on ::1
        let fixed = try PortBlock(count: 2)
        let turnPort = fixed.range.lowerBound, httpPort = fixed.range.lowerBound + 1
        let relay = try RelayProcess(ports: PortBlock(), ["--relay-address", "127.0.0.2", "--turn", "127.0.0.1:\(turnPort)",
                                                          "--turn-user", "alice:secret"], controlPort: httpPort)
        defer { relay.stop() }
        let server = ep("127.0.0.1:\(turnPort)")
        let client4 = try TurnWireClient(server: server)
        _ = try client4.allocate()
        let client6 = try TurnWireClient(server: server)
        _ = try client6.allocate(family: .ipv6)
        let leg = try XCTUnwrap(relay.createSession().legs.first)
        XCTAssertEqual(leg.hostText, "127.0.0.2")

        // The relay's own sockets: refused for being its own (the reason proves the wiring of
        // the listener, the control port and the port pool into the policy, which loopback
        // alone would hide). Permissions carry no port, so only ChannelBind and Send judge them.
        let ownPeers = [ep("127.0.0.1:\(turnPort)"), ep("127.0.0.1:\(httpPort)"), leg, ep("127.0.0.1:\(leg.port)")]
        var expected: [String: Int] = [:]
        var channel: UInt16 = 0x4000
        for (text, reason) in internalPeers {
            let peer = ep(text)
            let client = peer.isIPv4 ? client4 : client6
            XCTAssertEqual(try client.permit(peer).errorCode?.code, 403, "CreatePermission \(text)")
            XCTAssertEqual(try client.bind(channel, peer).errorCode?.code, 403, "ChannelBind \(text)")
            try client.sendIndication(to: peer, Array("to \(text)".utf8))
            expected[reason.rawValue, default: 0] += 3
            channel += 1
        }
        for peer in ownPeers {
            XCTAssertEqual(try client4.bind(channel, peer).errorCode?.code, 403, "ChannelBind \(peer)")
            try client4.sendIndication(to: peer, Array("to \(peer)".utf8))
            expected[PeerReason.relaySocket.rawValue, default: 0] += 2
            channel += 1
        }
        XCTAssertEqual(try client4.permit(ep("127.0.0.1:\(httpPort)")).errorCode?.code, 403, "the control port's address")
        expected[PeerReason.loopback.rawValue, default: 0] += 1

        let stats = try relay.waitFor { object in
            expected.allSatisfy { RelayProcess.number(object, "turn", "peer_refusals", $0.key) == $0.value }
        }
        for (reason, count) in expected {
            XCTAssertEqual(RelayProcess.number(stats, "turn", "peer_refusals", reason), count, reason)
        }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "drops", "forbidden_peer"), internalPeers.count + ownPeers.count,
                       "each refused Send indication is dropped and counted")
        XCTAssertEqual(RelayProcess.number(stats, "turn", "channels"), 0)
        XCTAssertEqual(RelayProcess.number(stats, "turn", "permissions"), 0)
        // /metrics says the same, summed over the workers.
        let metrics = try relay.request("GET", "/metrics").text.split(separator: "\n")
        let relaySocket = metrics.filter { $0.hasPrefix("mediarelay_turn_peer_refusals_total{") && $0.contains("reason=\"relay_socket\"") }
        XCTAssertEqual(relaySocket.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +), expected["relay_socket"])
    }

    func testOperatorDenyListCoversTheFormsThatEmbedIPv4() throws {
        try IPv6Loopback.require()  // IPv6 allocations on ::1
        let turnPort = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(), ["--relay-address", "127.0.0.1", "--turn", "127.0.0.1:\(turnPort)",
                                                          "--turn-user", "alice:secret", "--turn-denied-peer", "8.8.8.0/24"])
        defer { relay.stop() }
        let client4 = try TurnWireClient(server: ep("127.0.0.1:\(turnPort)"))
        _ = try client4.allocate()
        let client6 = try TurnWireClient(server: ep("127.0.0.1:\(turnPort)"))
        _ = try client6.allocate(family: .ipv6)
        var channel: UInt16 = 0x4000
        for text in ["8.8.8.8:53", "[::ffff:8.8.8.8]:53", "[64:ff9b::808:808]:53", "[2002:808:808::1]:53",
                     "[2001:0:4136:e378:8000:63bf:f7f7:f7f7]:53"] {
            let peer = ep(text)
            let client = peer.isIPv4 ? client4 : client6
            XCTAssertEqual(try client.permit(peer).errorCode?.code, 403, "CreatePermission \(text)")
            XCTAssertEqual(try client.bind(channel, peer).errorCode?.code, 403, "ChannelBind \(text)")
            channel += 1
        }
        // A public peer outside the list, in its NAT64 form, is still a peer.
        XCTAssertNil(try client6.permit(ep("[64:ff9b::909:909]:53")).errorCode?.code)
        let stats = try relay.waitFor { RelayProcess.number($0, "turn", "peer_refusals", "operator_denied") == 10 }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "peer_refusals", "operator_denied"), 10)
    }

    func testARelayedPortIsReachableOnlyUnderItsOwnFamily() throws {
        try IPv6Loopback.require()  // IPv6 allocations on ::1
        let turnPort = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(), ["--relay-address", "127.0.0.1", "--turn", "127.0.0.1:\(turnPort)",
                                                          "--turn-user", "alice:secret",
                                                          "--turn-allowed-peer", "127.0.0.1/32", "--turn-allowed-peer", "::1/128"])
        defer { relay.stop() }
        let server = ep("127.0.0.1:\(turnPort)")
        let alice4 = try TurnWireClient(server: server)
        let relayed4 = try alice4.allocate()
        let bob6 = try TurnWireClient(server: server)
        let relayed6 = try bob6.allocate(family: .ipv6)
        let carol6 = try TurnWireClient(server: server)
        let carolRelayed = try carol6.allocate(family: .ipv6)
        // Sockets of someone else on the other family's address at each relayed port.
        let sink6 = try DatagramSink(host: "::1", port: relayed4.port)
        let sink4 = try DatagramSink(host: "127.0.0.1", port: relayed6.port)

        let across6 = ep("[::1]:\(relayed4.port)"), across4 = ep("127.0.0.1:\(relayed6.port)")
        XCTAssertEqual(try bob6.bind(0x4000, across6).errorCode?.code, 403, "an IPv4-only relayed port under ::1")
        XCTAssertEqual(try alice4.bind(0x4000, across4).errorCode?.code, 403, "an IPv6-only relayed port under 127.0.0.1")
        XCTAssertNil(try bob6.permit(across6).errorCode?.code, "the permission is for the relay's address, which is allowed")
        XCTAssertNil(try alice4.permit(across4).errorCode?.code)
        try bob6.sendIndication(to: across6, Array("across to v6 sink".utf8))
        try alice4.sendIndication(to: across4, Array("across to v4 sink".utf8))

        // The real relayed address of the same family still reaches the other client.
        XCTAssertNil(try bob6.bind(0x4001, carolRelayed).errorCode?.code)
        XCTAssertNil(try carol6.permit(relayed6).errorCode?.code)
        try bob6.sendIndication(to: carolRelayed, Array("to carol".utf8))
        let data = try carol6.nextIndicationData()
        XCTAssertEqual(data, Array("to carol".utf8))

        let stats = try relay.waitFor { RelayProcess.number($0, "turn", "drops", "forbidden_peer") == 2 }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "drops", "forbidden_peer"), 2)
        XCTAssertEqual(RelayProcess.number(stats, "turn", "peer_refusals", "relay_socket"), 4)
        XCTAssertEqual(sink6.drain(), [], "the IPv6 socket at the IPv4 relayed port received nothing")
        XCTAssertEqual(sink4.drain(), [], "the IPv4 socket at the IPv6 relayed port received nothing")
    }
}
