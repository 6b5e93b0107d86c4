import DatagramEngine
import Foundation
import Glibc
@testable import RelayCore
import NetAddress
import STUN
import TestSupport
import XCTest

/// TURN over TCP on every backend: the same stream relays the same datagrams however it is cut
/// into segments, what peers send comes back framed (ChannelData padded to 4), every malformed
/// shape closes its own connection and nothing else, and a connection's end is its
/// allocation's end.
final class TurnStreamFramingTests: XCTestCase {
    /// Payloads of every length modulo 4, so every padding is exercised, and one large.
    private let payloads: [[UInt8]] = (1...8).map { length in (0..<length).map { UInt8($0 &+ length) } } + [[UInt8](repeating: 7, count: 1200)]

    func testTheSameStreamRelaysTheSameDatagramsHoweverItIsCut() throws {
        for backend in [Backend.perPacket, .mmsg, .uring] {
            let relay = try TurnStreamRelay(backend: backend)
            let peer = try PlainUDPPeer()
            // The whole stream: ChannelData of every padding, then a Send indication.
            var stream: [UInt8] = []
            for payload in payloads { stream += paddedChannelData(0x4000, payload) }
            stream += sendIndication(peer.address, [9, 9, 9])
            let expected = payloads + [[9, 9, 9]]
            for segments in [StreamTurnClient.Segments.whole, .bytewise] {
                let client = try StreamTurnClient(to: relay.tcp)
                _ = try client.allocate(channel: 0x4000, to: peer.address)
                client.write(stream, segments: segments)
                XCTAssertEqual(peer.receiveAll(), expected, "\(backend), \(segments)")
            }
            // Many messages in one segment, twice over, in one write.
            let client = try StreamTurnClient(to: relay.tcp)
            _ = try client.allocate(channel: 0x4000, to: peer.address)
            client.write(stream + stream)
            XCTAssertEqual(peer.receiveAll(), expected + expected, "\(backend), two streams in one segment")
        }
    }

    func testWhatPeersSendComesBackFramedAndPadded() throws {
        let relay = try TurnStreamRelay()
        let peer = try PlainUDPPeer()
        let other = try PlainUDPPeer()
        let client = try StreamTurnClient(to: relay.tcp)
        let relayed = try client.allocate(channel: 0x4001, to: peer.address)
        _ = try XCTUnwrap(client.ask(.createPermission) { $0.append(.xorPeerAddress, xorAddress: other.address) })
        for payload in payloads { peer.send(payload, to: relayed) }
        for payload in payloads {
            let message = try XCTUnwrap(client.readMessage(), "ChannelData of \(payload.count) bytes")
            XCTAssertEqual(message, [0x40, 0x01, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload)
        }
        // A peer without a channel: a Data indication.
        other.send([1, 2, 3], to: relayed)
        let indication = try StunMessage(bytes: try XCTUnwrap(client.readMessage()))
        XCTAssertEqual(indication.method, .data)
        XCTAssertEqual(try indication.value(.data) { Array($0) }, [1, 2, 3])
    }

    func testEachMalformedShapeClosesOnlyItsConnection() throws {
        let relay = try TurnStreamRelay()
        let peer = try PlainUDPPeer()
        let bystander = try StreamTurnClient(to: relay.tcp)
        _ = try bystander.allocate(channel: 0x4000, to: peer.address)
        let shapes: [(String, [UInt8], ConnectionCloseReason)] = [
            ("HTTP", Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), .framing),
            ("a STUN length not a multiple of 4", [0x00, 0x01, 0x00, 0x05, 0x21, 0x12, 0xA4, 0x42] + [UInt8](repeating: 0, count: 17), .framing),
            ("a bad magic cookie", [0x00, 0x01, 0x00, 0x00, 0xDE, 0xAD, 0xBE, 0xEF] + [UInt8](repeating: 0, count: 12), .framing),
            ("ChannelData outside the channels", [0x80, 0x00, 0x00, 0x04, 1, 2, 3, 4], .framing),
            ("a TLS ClientHello on the TCP port", [0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0, 0, 1, 0], .tlsOnTCP),
            ("garbage after a valid Binding", bindingRequest() + [0xFF, 0xFF, 0xFF, 0xFF], .framing),
        ]
        for (name, bytes, reason) in shapes {
            let before = relay.stats.transports[closed: .tcp, reason: reason]
            let client = try StreamTurnClient(to: relay.tcp)
            client.write(bytes)
            XCTAssertTrue(client.closedByRelay(), "\(name): still open")
            XCTAssertTrue(relay.wait { $0.transports[closed: .tcp, reason: reason] == before + 1 }, "\(name): not counted as \(reason.name)")
        }
        // The bystander's allocation relays as before.
        bystander.write(paddedChannelData(0x4000, [42]))
        XCTAssertEqual(peer.receiveAll(), [[42]])
        XCTAssertEqual(relay.stats.allocations, 1)
    }

    func testClosingTheConnectionDeletesItsAllocation() throws {
        let relay = try TurnStreamRelay()
        let peer = try PlainUDPPeer()
        var client: StreamTurnClient? = try StreamTurnClient(to: relay.tcp)
        let relayed = try client!.allocate(channel: 0x4000, to: peer.address)
        XCTAssertTrue(relay.wait { $0.allocations == 1 && $0.openConnections[TurnTransport.tcp.rawValue] == 1 })
        client = nil
        XCTAssertTrue(relay.wait { $0.allocations == 0 && $0.openConnections[TurnTransport.tcp.rawValue] == 0 })
        XCTAssertEqual(relay.stats.transports[closed: .tcp, reason: .peerClosed], 1)
        // The relayed port is closed with it: a datagram to it goes nowhere.
        peer.send([1], to: relayed)
        XCTAssertEqual(relay.stats.counters.channelDataToClients, 0)
    }

    func testRefreshOfZeroEndsTheAllocationAndThenTheConnection() throws {
        let relay = try TurnStreamRelay()
        let peer = try PlainUDPPeer()
        let client = try StreamTurnClient(to: relay.tcp)
        _ = try client.allocate(channel: 0x4000, to: peer.address)
        let answer = try XCTUnwrap(client.ask(.refresh) { $0.append(.lifetime, uint32: 0) }, "the Refresh answer arrives before the close")
        XCTAssertEqual(answer.messageClass, .successResponse)
        XCTAssertTrue(client.closedByRelay())
        XCTAssertTrue(relay.wait { $0.transports[closed: .tcp, reason: .allocationEnded] == 1 })
    }

    func testTCPRelayingIsRefusedWith442() throws {
        let relay = try TurnStreamRelay()
        let client = try StreamTurnClient(to: relay.tcp)
        let answer = try XCTUnwrap(client.ask(.allocate) { $0.append(.requestedTransport, [6, 0, 0, 0]) })
        XCTAssertEqual(answer.errorCode, 442)
    }

    func testLimitsOnConnectionsAndDeadlines() throws {
        let relay = try TurnStreamRelay {
            $0.streamLimits.maxPerSource = 3
            $0.streamLimits.firstMessageNanoseconds = 300_000_000
            $0.streamLimits.idleNanoseconds = 600_000_000
        }
        // A fourth connection from one address is closed on accept.
        let kept = try (0..<3).map { _ in try StreamTurnClient(to: relay.tcp) }
        XCTAssertTrue(relay.wait { $0.openConnections[TurnTransport.tcp.rawValue] == 3 })
        let fourth = try StreamTurnClient(to: relay.tcp)
        XCTAssertTrue(fourth.closedByRelay(seconds: 2))
        XCTAssertTrue(relay.wait { $0.transports[closed: .tcp, reason: .perSourceLimit] == 1 })
        // The three that never spoke reach their first-message deadline.
        for client in kept { XCTAssertTrue(client.closedByRelay(seconds: 3)) }
        XCTAssertTrue(relay.wait { $0.transports[closed: .tcp, reason: .messageTimeout] == 3 })
        // One that spoke (a Binding) and took no allocation reaches its idle deadline.
        let idle = try StreamTurnClient(to: relay.tcp)
        idle.write(bindingRequest())
        XCTAssertNotNil(idle.readMessage())
        XCTAssertTrue(idle.closedByRelay(seconds: 3))
        XCTAssertTrue(relay.wait { $0.transports[closed: .tcp, reason: .idleTimeout] == 1 })
    }

    private func bindingRequest() -> [UInt8] {
        MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes
    }
}
