@testable import ClientSockets
import Foundation
import Glibc
@testable import LoadGen
import NetAddress
import STUN
import TestPorts
@testable import TurnClientKit
import XCTest

/// Three real mediarelay processes as one TURN service, on 127.0.0.1, 127.0.0.2 and 127.0.0.3:
/// each with its own port range and control port, one REST secret, loopback peers allowed, and
/// the other two as `--turn-alternate`s, listed so that relay i names relay i+1 first (the
/// second relay, draining, sends its first new client to the third).
final class FleetFixture {
    static let secret = "fleet-secret"

    struct Member {
        let relay: RelayProcess
        /// The TURN listener (and the relayed addresses' host).
        let turn: Endpoint
    }

    let members: [Member]

    /// `extra[i]`: more arguments for relay i (a cap, a drain time).
    init(extra: [[String]]) throws {
        let hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
        // A free port on each address, let go for its relay to bind.
        let listeners = try hosts.map { Endpoint(host: $0, port: try IndependentPeer(host: $0).port)! }
        members = try hosts.indices.map { i in
            let alternates = [listeners[(i + 1) % 3], listeners[(i + 2) % 3]].flatMap { ["--turn-alternate", "\($0)"] }
            let relay = try RelayProcess(ports: PortBlock(count: 40), [
                "--relay-address", hosts[i], "--turn", "\(listeners[i])", "--turn-secret", Self.secret,
                "--turn-realm", "fleet.test", "--turn-allowed-peer", "127.0.0.0/8", "--workers", "1",
            ] + alternates + extra[i])
            return Member(relay: relay, turn: listeners[i])
        }
    }

    func stop() {
        for member in members where member.relay.process.isRunning { XCTAssertEqual(member.relay.stop(), 0) }
    }

    /// A TURN client of relay `index` with REST credentials, speaking through the load
    /// generator's client (which follows one 300 Try Alternate).
    func client(of index: Int, user: String = "fleet") throws -> FleetClient {
        try FleetClient(server: members[index].turn, user: user)
    }

    /// The relay whose TURN listener is `server` (after a redirect, say).
    func index(of server: SocketAddress) -> Int? {
        members.firstIndex { $0.turn.description == server.description }
    }
}

/// One TURN client of the fleet: its own socket on 127.0.0.1, REST credentials for `user`.
final class FleetClient {
    let turn: TurnAllocationClient
    private let transactions = TurnTransactions(answers: .sockets, interruptible: false)
    private(set) var relayed: Endpoint?

    init(server: Endpoint, user: String) throws {
        let login = TurnCredential.secret(FleetFixture.secret).login(validUntil: UInt64(time(nil)) + 3600)
        let socket = try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0)
        turn = TurnAllocationClient(socket: socket, server: try SocketAddress(server), username: login.username, password: login.password)
    }

    /// Where the client's requests and data go now.
    var server: SocketAddress { turn.server }

    func run(_ method: Method, _ attributes: @escaping (inout MessageBuilder) -> Void) -> StunMessage? {
        transactions.run([turn], method) { _, builder in attributes(&builder) }[0]
    }

    /// Allocate (following a 300 once); the answer.
    @discardableResult
    func allocate() -> StunMessage? {
        let answer = run(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
        relayed = answer.flatMap { try? $0.xorAddress(.xorRelayedAddress) }
        return answer
    }

    /// Binds `channel` to `peer` (which installs its permission too); whether it succeeded.
    func bind(_ channel: UInt16, to peer: Endpoint) -> Bool {
        run(.channelBind) { builder in
            builder.append(.channelNumber, [UInt8(channel >> 8), UInt8(channel & 0xFF), 0, 0])
            builder.append(.xorPeerAddress, xorAddress: peer)
        }?.messageClass == .successResponse
    }

    func send(channel: UInt16, _ payload: [UInt8]) {
        let bytes = [UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
        _ = bytes.withUnsafeBytes { raw in server.withSockaddr { sendto(turn.socket.fd, raw.baseAddress, raw.count, 0, $0, $1) } }
    }

    /// Payloads of the ChannelData that arrives within `seconds`, until `expected` have come.
    func receiveChannelData(expected: Int, seconds: Double = 10) -> [[UInt8]] {
        var payloads: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        let deadline = Date().addingTimeInterval(seconds)
        while payloads.count < expected && Date() < deadline {
            var ready = pollfd(fd: turn.socket.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            let count = recv(turn.socket.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count >= 4, let frame = buffer.withUnsafeBytes({ ChannelData.parse(UnsafeRawBufferPointer(rebasing: $0[0..<count])) })
            else { continue }
            payloads.append(Array(buffer[4..<(4 + frame.length)]))
        }
        return payloads
    }
}
