@testable import ClientSockets
import Foundation
@testable import LoadGen
import STUN
@testable import TurnClientKit
import XCTest

/// The relay's TURN server in a FastPathNetwork: listeners on the relay's client-side
/// addresses (both families), relayed sockets on the wildcard advertised as the relay's IPv4
/// address on the peer's link, peers on the peer's link allowed. A client in the client's
/// namespace gets an allocation whose peers are in the peer's namespace, every socket an
/// IndependentPeer and the control path LoadGen's TURN client (TurnServerFixture.Allocation
/// sends and reads ChannelData and indications with their marks).
enum FastPathTurn {
    static let port: UInt16 = 3478
    static let user = "alice"
    static let password = "secret"

    /// The relay's TURN options: listeners on `port` of both client-side addresses; relayed
    /// addresses of `relayed`'s family only (on that family's wildcard, advertised as the
    /// relay's address on the peer's link).
    static func arguments(relayed: FastPathNetwork.Family = FastPathNetwork.ipv4, port: UInt16 = port) -> [String] {
        let (v4, v6) = (FastPathNetwork.ipv4, FastPathNetwork.ipv6)
        return ["--relay-address", relayed.back.contains(":") ? "::" : "0.0.0.0", "--advertise-address", relayed.back,
                "--turn", "\(v4.front):\(port)", "--turn", "[\(v6.front)]:\(port)",
                "--turn-realm", "fastpath.test", "--turn-user", "\(user):\(password)",
                "--turn-allowed-peer", v4.peerSubnet, "--turn-allowed-peer", v6.peerSubnet]
    }

    /// A client on `client`'s family, talking to the listener on `port`, with an allocation of
    /// `peers`' family (asked for when IPv6), a permission for one peer and channel 0x4000
    /// bound to another, both on `peers`' family in the peer's namespace.
    /// With `dontFragment`, the Allocate asks for DONT-FRAGMENT.
    static func allocate(_ network: FastPathNetwork, client family: FastPathNetwork.Family, peers: FastPathNetwork.Family,
                         port: UInt16 = port, dontFragment: Bool = false) throws -> TurnServerFixture.Allocation {
        let client = try network.inside(.client) { try IndependentPeer(host: family.client) }
        let (channelPeer, indicationPeer) = try network.inside(.peer) {
            (try IndependentPeer(host: peers.peer), try IndependentPeer(host: peers.peer))
        }
        let server = try SocketAddress(host: family.front, port: port)
        let turn = TurnAllocationClient(socket: client.socket, server: server, username: user, password: password)
        let channelPeerAddress = try SocketAddress(host: peers.peer, port: channelPeer.port)
        let indicationPeerAddress = try SocketAddress(host: peers.peer, port: indicationPeer.port)
        let channel = TurnServerFixture.Allocation.channel
        let ipv6 = peers.peer.contains(":")
        let allocated = try ask(turn, .allocate) { builder in
            builder.append(.requestedTransport, [17, 0, 0, 0])
            if ipv6 { builder.append(.requestedAddressFamily, [AddressFamily.ipv6.rawValue, 0, 0, 0]) }
            if dontFragment { builder.append(.dontFragment, []) }
        }
        let relayed = try XCTUnwrap(allocated.socketAddress(.xorRelayedAddress), "Allocate without XOR-RELAYED-ADDRESS")
        _ = try ask(turn, .createPermission) { $0.append(.xorPeerAddress, address: indicationPeerAddress) }
        _ = try ask(turn, .channelBind) { builder in
            builder.append(.channelNumber, [UInt8(channel >> 8), UInt8(channel & 0xFF), 0, 0])
            builder.append(.xorPeerAddress, address: channelPeerAddress)
        }
        let allocation = TurnServerFixture.Allocation(client: client, server: server, relayed: relayed, channelPeer: channelPeer,
                                                      channelPeerAddress: channelPeerAddress, indicationPeer: indicationPeer,
                                                      indicationPeerAddress: indicationPeerAddress)
        allocation.turn = turn
        return allocation
    }

    /// One request of `turn`'s (the 401 round included) that must succeed.
    private static func ask(_ turn: TurnAllocationClient, _ method: STUN.Method,
                            _ attributes: @escaping (inout MessageBuilder) -> Void) throws -> StunMessage {
        let answers = TurnTransactions(answers: .sockets, interruptible: false).run([turn], method) { _, builder in attributes(&builder) }
        guard let answer = answers.first ?? nil else { throw LoadError("\(method): no answer") }
        guard answer.messageClass == .successResponse else {
            throw LoadError("\(method): answered \(answer.errorCode.map { "\($0.code) \($0.reason)" } ?? "an error without a code")")
        }
        return answer
    }
}
