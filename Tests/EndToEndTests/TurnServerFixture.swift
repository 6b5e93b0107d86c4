@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import STUN
import TestPorts
@testable import TurnClientKit
import XCTest

/// The real mediarelay as a TURN server (`--turn`), and TURN clients of it built so that every
/// mark and every request is made and read outside the code under test: each socket is an IndependentPeer
/// (LoadGen's socket and cmsg code, IP_TOS / IPV6_TCLASS set before each send), the control path
/// is LoadGen's TURN client, and ChannelData and Send/Data framing is written and read here and
/// by the STUN codec. DatagramEngine touches only the relay's side of the wire.
final class TurnServerFixture {
    static let realm = "marking.test"
    static let user = "alice"
    static let password = "secret"

    let relay: RelayProcess
    /// The port of the TURN listener on each host asked for ("127.0.0.1", "::1", "::").
    private let listeners: [String: UInt16]

    /// Starts `mediarelay` with a TURN listener on each of `hosts`, relayed addresses on
    /// 127.0.0.1 and ::1, loopback peers allowed, and `arguments` (the marking flags under test).
    init(hosts: [String], _ arguments: [String]) throws {
        var listeners: [String: UInt16] = [:]
        var turn: [String] = []
        for host in hosts {
            // A free port, released for the relay to bind (as MarkingTests finds its listeners);
            // on "::" one free on ::1 and 127.0.0.1 alike is likely, and the relay says if not.
            let port = try IndependentPeer(host: host == "::" ? "::1" : host).port
            listeners[host] = port
            turn += ["--turn", host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"]
        }
        self.listeners = listeners
        // --relay-address 127.0.0.1 relays IPv4 there and IPv6 on ::1 (TurnServerAddresses).
        relay = try RelayProcess(ports: PortBlock(count: 100), [
            "--relay-address", "127.0.0.1", "--turn-realm", Self.realm, "--turn-user", "\(Self.user):\(Self.password)",
            "--turn-allowed-peer", "127.0.0.1/32", "--turn-allowed-peer", "::1/128",
        ] + turn + arguments)
    }

    /// A TURN client on `host` whose socket is an IndependentPeer's, with a static user's
    /// credentials (the realm and nonce come from the server's first 401). It talks to the
    /// listener on `listener` (its own host by default; "::" is reached on the client's host).
    func client(on host: String, listener: String? = nil, user: String = TurnServerFixture.user,
                password: String = TurnServerFixture.password) throws -> (peer: IndependentPeer, turn: TurnAllocationClient) {
        let peer = try IndependentPeer(host: host)
        let port = try XCTUnwrap(listeners[listener ?? host], "no TURN listener on \(listener ?? host)")
        let server = try SocketAddress(host: host, port: port)
        return (peer, TurnAllocationClient(socket: peer.socket, server: server, username: user, password: password))
    }

    /// A client on `host` with an allocation of the family of `peerHost` (the client's own by
    /// default), a channel bound to one peer and a permission (no channel) for another, both on
    /// `peerHost`, so that each framing has its own peer both ways.
    func allocate(on host: String, listener: String? = nil, peersOn peerHost: String? = nil) throws -> Allocation {
        let peerHost = peerHost ?? host
        let (client, turn) = try self.client(on: host, listener: listener)
        let channelPeer = try IndependentPeer(host: peerHost)
        let indicationPeer = try IndependentPeer(host: peerHost)
        let channelPeerAddress = try SocketAddress(host: peerHost, port: channelPeer.port)
        let indicationPeerAddress = try SocketAddress(host: peerHost, port: indicationPeer.port)
        let transactions = TurnTransactions(answers: .sockets, interruptible: false)
        let ipv6 = channelPeerAddress.family == AF_INET6
        let allocated = try Self.success(transactions.run([turn], .allocate) { _, builder in
            builder.append(.requestedTransport, [17, 0, 0, 0])
            if ipv6 { builder.append(.requestedAddressFamily, [AddressFamily.ipv6.rawValue, 0, 0, 0]) }
        }, "Allocate on \(host)")
        let relayed = try XCTUnwrap(allocated.socketAddress(.xorRelayedAddress), "Allocate without XOR-RELAYED-ADDRESS")
        _ = try Self.success(transactions.run([turn], .createPermission) { _, builder in
            builder.append(.xorPeerAddress, address: indicationPeerAddress)
        }, "CreatePermission for \(indicationPeerAddress)")
        _ = try Self.success(transactions.run([turn], .channelBind) { _, builder in
            builder.append(.channelNumber, [UInt8(Allocation.channel >> 8), UInt8(Allocation.channel & 0xFF), 0, 0])
            builder.append(.xorPeerAddress, address: channelPeerAddress)
        }, "ChannelBind to \(channelPeerAddress)")
        let allocation = Allocation(client: client, server: turn.server, relayed: relayed, channelPeer: channelPeer,
                                    channelPeerAddress: channelPeerAddress, indicationPeer: indicationPeer,
                                    indicationPeerAddress: indicationPeerAddress)
        allocation.turn = turn
        return allocation
    }

    /// Deletes `allocation` (a Refresh with LIFETIME 0) and checks that the relay agreed.
    func delete(_ allocation: Allocation) throws {
        let turn = try XCTUnwrap(allocation.turn)
        _ = try Self.success(TurnTransactions(answers: .sockets, interruptible: false).run([turn], .refresh) { _, builder in
            builder.append(.lifetime, [0, 0, 0, 0])
        }, "Refresh with LIFETIME 0")
    }

    private static func success(_ answers: [StunMessage?], _ what: String) throws -> StunMessage {
        let answer = try XCTUnwrap(answers.first ?? nil, "\(what): no answer")
        guard answer.messageClass == .successResponse else {
            throw LoadError("\(what): answered \(answer.errorCode.map { "\($0.code) \($0.reason)" } ?? "an error without a code")")
        }
        return answer
    }

    /// One allocation and its two peers. Each path sends a burst of datagrams, one per TOS
    /// byte, and reads the TOS each arrived with where it left the relay.
    final class Allocation {
        static let channel: UInt16 = 0x4000

        enum Path: CaseIterable, CustomStringConvertible {
            case channelDataToPeer, sendIndicationToPeer, channelDataToClient, dataIndicationToClient

            var description: String {
                switch self {
                case .channelDataToPeer: "ChannelData client->peer"
                case .sendIndicationToPeer: "Send indication client->peer"
                case .channelDataToClient: "peer->client as ChannelData"
                case .dataIndicationToClient: "peer->client as Data indication"
                }
            }

            /// The payload's second byte, so a datagram of one path is never counted for another.
            var tag: UInt8 {
                switch self {
                case .channelDataToPeer: 1
                case .sendIndicationToPeer: 2
                case .channelDataToClient: 3
                case .dataIndicationToClient: 4
                }
            }
        }

        let client: IndependentPeer
        let server: SocketAddress
        let relayed: SocketAddress
        let channelPeer: IndependentPeer
        let channelPeerAddress: SocketAddress
        let indicationPeer: IndependentPeer
        let indicationPeerAddress: SocketAddress
        /// The client's TURN session (realm, nonce), for requests after the set-up.
        var turn: TurnAllocationClient?

        init(client: IndependentPeer, server: SocketAddress, relayed: SocketAddress, channelPeer: IndependentPeer,
             channelPeerAddress: SocketAddress, indicationPeer: IndependentPeer, indicationPeerAddress: SocketAddress) {
            self.client = client
            self.server = server
            self.relayed = relayed
            self.channelPeer = channelPeer
            self.channelPeerAddress = channelPeerAddress
            self.indicationPeer = indicationPeer
            self.indicationPeerAddress = indicationPeerAddress
        }

        /// Sends datagram i of `marks` along `path` with TOS byte `marks[i]`, and returns the TOS
        /// bytes of those that came out of the relay, in the order they were sent (fewer when some
        /// never came).
        func relay(_ marks: [UInt8], along path: Path) throws -> [UInt8] {
            for (index, tos) in marks.enumerated() {
                let payload: [UInt8] = [0x4D, path.tag, UInt8(index), 0]
                switch path {
                case .channelDataToPeer:
                    let header = [UInt8(Self.channel >> 8), UInt8(Self.channel & 0xFF), 0, UInt8(payload.count)]
                    try client.send(header + payload, tos: tos, to: server)
                case .sendIndicationToPeer:
                    var send = MessageBuilder(MessageType(.send, .indication), transactionID: .random())
                    send.append(.xorPeerAddress, address: indicationPeerAddress)
                    send.append(.data, payload)
                    try client.send(send.bytes, tos: tos, to: server)
                case .channelDataToClient:
                    try channelPeer.send(payload, tos: tos, to: relayed)
                case .dataIndicationToClient:
                    try indicationPeer.send(payload, tos: tos, to: relayed)
                }
            }
            let (receiver, from) = switch path {
            case .channelDataToPeer: (channelPeer, relayed)
            case .sendIndicationToPeer: (indicationPeer, relayed)
            case .channelDataToClient, .dataIndicationToClient: (client, server)
            }
            var arrived: [UInt8: UInt8] = [:]
            let deadline = Date().addingTimeInterval(10)
            while arrived.count < marks.count && Date() < deadline {
                for arrival in receiver.receive(expected: marks.count - arrived.count, seconds: deadline.timeIntervalSinceNow)
                where arrival.source.description == from.description {
                    guard let payload = unframe(arrival.bytes, along: path), payload.count == 4, payload[0] == 0x4D,
                          payload[1] == path.tag else { continue }
                    arrived[payload[2]] = arrival.tos
                }
            }
            return arrived.sorted { $0.key < $1.key }.map(\.value)
        }

        /// The payload as the receiver of `path` sees it: bare at a peer, inside ChannelData on
        /// the channel or a Data indication from the indication peer at the client; nil for
        /// anything else (a late answer to a retransmitted request, say).
        private func unframe(_ bytes: [UInt8], along path: Path) -> [UInt8]? {
            switch path {
            case .channelDataToPeer, .sendIndicationToPeer:
                return bytes
            case .channelDataToClient:
                guard bytes.count >= 4, UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == Self.channel else { return nil }
                let length = Int(bytes[2]) << 8 | Int(bytes[3])
                return bytes.count >= 4 + length ? Array(bytes[4..<(4 + length)]) : nil
            case .dataIndicationToClient:
                guard let message = try? StunMessage(bytes: bytes), message.type == MessageType(.data, .indication),
                      message.socketAddress(.xorPeerAddress)?.description == indicationPeerAddress.description,
                      let slot = message.index.first(.data) else { return nil }
                return Array(message.bytes[slot.offset..<(slot.offset + slot.length)])
            }
        }
    }
}
