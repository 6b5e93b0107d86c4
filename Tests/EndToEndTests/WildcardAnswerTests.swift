import Foundation
import Glibc
@testable import LoadGen
import NetAddress
import STUN
import TestPorts
import TestSupport
import XCTest

/// The real executable bound to 0.0.0.0 and to [::] on a host with two addresses on one
/// interface (`TwoAddressNetwork`): every answer a client gets comes from the address the
/// client sent to, as its own socket sees: TURN Binding and Allocate answers (the 401 and the
/// success) and a Data indication relayed to it, a forward rule's reply and a session's media.
/// Each client sends to the address the relay host's route would not choose, so an answer
/// whose source the route picked would show up as the other address.
final class WildcardAnswerTests: XCTestCase {
    static let turnPort: UInt16 = 3478
    static let forwardPort: UInt16 = 4000

    func testAnswersComeFromTheAddressTheClientReachedOnMmsg() throws { try everyFamily(engine: "mmsg") }

    func testAnswersComeFromTheAddressTheClientReachedOnUring() throws { try everyFamily(engine: "uring") }

    func testAnswersComeFromTheAddressTheClientReachedOnPerPacket() throws { try everyFamily(engine: "perpacket") }

    private func everyFamily(engine: String) throws {
        let network = try TwoAddressNetwork()
        defer { network.remove() }
        try answers(network, engine: engine, family: network.ipv4, wildcard: "0.0.0.0")
        try IPv6Loopback.require()
        try answers(network, engine: engine, family: network.ipv6, wildcard: "::")
    }

    private func answers(_ network: TwoAddressNetwork, engine: String, family: TwoAddressNetwork.Family, wildcard: String) throws {
        let context = "--engine \(engine), bound to \(wildcard)"
        let (relayHost, clientHost) = (network.relayHost, network.clientHost)
        let upstream = try clientHost.inside { try IndependentPeer(host: family.client) }
        let bound = TwoAddressNetwork.Family.bracketed(wildcard)
        // Sessions' legs and relayed sockets on the wildcard too (--relay-address), advertised
        // as the preferred address.
        let relay = try relayHost.inside {
            try RelayProcess(ports: PortBlock(count: 100), [
                "--engine", engine, "--workers", "1", "--relay-address", wildcard, "--advertise-address", family.preferred,
                "--turn", "\(bound):\(Self.turnPort)", "--turn-realm", "pktinfo.test", "--turn-user", "alice:secret",
                "--turn-allowed-peer", family.subnet,
                "--forward", "\(bound):\(Self.forwardPort)=\(TwoAddressNetwork.Family.bracketed(family.client)):\(upstream.port)",
            ])
        }
        defer { XCTAssertEqual(relay.stop(), 0, context) }
        XCTAssertTrue(relay.log.contains("engine \(engine)") || relay.log.contains(engine), "\(context): \(relay.log)")
        try turn(network, family, context)
        try forwardRule(network, family, upstream, context)
        try session(network, relay, family, context)
    }

    private func turn(_ network: TwoAddressNetwork, _ family: TwoAddressNetwork.Family, _ context: String) throws {
        let server = try XCTUnwrap(Endpoint(host: family.other, port: Self.turnPort))
        let client = try network.clientHost.inside { try TurnWireClient(server: server, host: family.client) }
        let binding = try client.exchange(MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes)
        XCTAssertEqual(binding.messageClass, .successResponse, context)
        XCTAssertEqual(client.lastSource, server, "\(context): the Binding answer")
        try client.learnChallenge()
        XCTAssertEqual(client.lastSource, server, "\(context): the 401 to an Allocate")
        let relayed = try client.allocate(family: family.client.contains(":") ? .ipv6 : .ipv4)
        XCTAssertEqual(client.lastSource, server, "\(context): the Allocate success")
        let peer = try network.clientHost.inside { try IndependentPeer(host: family.client) }
        XCTAssertEqual(try client.permit(XCTUnwrap(Endpoint(host: family.client, port: peer.port))).messageClass, .successResponse, context)
        XCTAssertEqual(client.lastSource, server, "\(context): the CreatePermission success")
        try peer.send([1, 2, 3], tos: 0, to: relayed.hostText, port: relayed.port)
        XCTAssertEqual(try client.nextIndicationData(), [1, 2, 3], context)
        XCTAssertEqual(client.lastSource, server, "\(context): a Data indication relayed to the client")
    }

    private func forwardRule(_ network: TwoAddressNetwork, _ family: TwoAddressNetwork.Family, _ upstream: IndependentPeer,
                             _ context: String) throws {
        let client = try network.clientHost.inside { try IndependentPeer(host: family.client) }
        try client.send([7], tos: 0, to: family.other, port: Self.forwardPort)
        let request = try XCTUnwrap(upstream.receive(expected: 1).first, "\(context): nothing reached the upstream")
        try upstream.send(request.bytes + [8], tos: 0, to: request.source)
        let reply = try XCTUnwrap(client.receive(expected: 1).first, "\(context): no reply through the forward rule")
        XCTAssertEqual(reply.bytes, [7, 8], context)
        XCTAssertEqual(reply.source.description, Endpoint(host: family.other, port: Self.forwardPort)!.description,
                       "\(context): the forward rule's reply")
    }

    private func session(_ network: TwoAddressNetwork, _ relay: RelayProcess, _ family: TwoAddressNetwork.Family, _ context: String) throws {
        let (id, legs) = try network.relayHost.inside { try relay.createSession() }
        let peers = try network.clientHost.inside { try (0..<2).map { _ in try IndependentPeer(host: family.client) } }
        // Peer 0 latches leg 0; peer 1's first datagram latches leg 1 and goes on to peer 0 from
        // leg 0; peer 0's next goes to peer 1 from leg 1. Both send to the other address.
        try peers[0].send([0], tos: 0, to: family.other, port: legs[0].port)
        try network.relayHost.inside { try relay.waitForLatch(session: id, leg: 0) }
        for (from, to) in [(1, 0), (0, 1)] {
            try peers[from].send([UInt8(10 + from)], tos: 0, to: family.other, port: legs[from].port)
            let arrival = try XCTUnwrap(peers[to].receive(expected: 1).first, "\(context): nothing reached leg \(to)'s peer")
            XCTAssertEqual(arrival.bytes, [UInt8(10 + from)], context)
            XCTAssertEqual(arrival.source.description, Endpoint(host: family.other, port: legs[to].port)!.description,
                           "\(context): session media from leg \(to)")
        }
    }
}
