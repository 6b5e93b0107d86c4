import ClientSockets
import DatagramEngine
import Foundation
import LoadGen
import NetAddress
import XCTest

/// Datagrams relayed at a steady pace while a test loads the relay some other way: a UDP TURN
/// allocation with a channel to a peer, both ways, and a session's two legs, both ways. `tick`
/// sends one datagram on every path and reads what has come without waiting, so a test loop
/// that drives its load calls it every few milliseconds; `settle` waits for the last ones.
/// Every datagram carries its path and a sequence number: a path has relayed everything when
/// each number sent has arrived.
final class SteadyTrafficHarness {
    enum Path: UInt8, CaseIterable, CustomStringConvertible {
        case turnToPeer, turnToClient, sessionForward, sessionBack

        var description: String {
            switch self {
            case .turnToPeer: "UDP TURN client to peer"
            case .turnToClient: "UDP TURN peer to client"
            case .sessionForward: "session leg 0 to leg 1"
            case .sessionBack: "session leg 1 to leg 0"
            }
        }
    }

    static let channel: UInt16 = 0x4000
    private let turn: TurnWireClient
    private let turnSink: DatagramSink
    private let peer: IndependentPeer
    private let peerSink: DatagramSink
    private let relayed: SocketAddress
    private let legs: [Endpoint]
    private let sessionPeers: Peers
    private var sent: [Path: Int] = [:]
    private var received: [Path: Set<UInt32>] = [:]

    /// Allocates on the relay's UDP TURN listener at `turnPort` (user alice:secret, loopback
    /// peers allowed), binds a channel to a peer, and creates a session whose legs have both
    /// latched.
    init(relay: RelayProcess, turnPort: UInt16) throws {
        turn = try TurnWireClient(server: Endpoint(host: "127.0.0.1", port: turnPort)!)
        turnSink = DatagramSink(socket: turn.socket)
        peer = try IndependentPeer(host: "127.0.0.1")
        peerSink = DatagramSink(socket: peer.socket)
        let relayedEndpoint = try turn.allocate()
        relayed = try SocketAddress(host: relayedEndpoint.hostText, port: relayedEndpoint.port)
        let bound = try turn.bind(Self.channel, Endpoint(host: "127.0.0.1", port: peer.port)!)
        guard bound.messageClass == .successResponse else { throw LoadError("ChannelBind refused: \(bound)") }
        let session = try relay.createSession()
        legs = session.legs
        sessionPeers = try Peers(count: 2)
        sessionPeers.send(from: 0, to: legs[0], [0xFF])
        try relay.waitForLatch(session: session.id, leg: 0)
        sessionPeers.send(from: 1, to: legs[1], [0xFF])
        try relay.waitForLatch(session: session.id, leg: 1)
    }

    /// One datagram on every path, then what has arrived so far.
    func tick() throws {
        for path in Path.allCases {
            let sequence = UInt32(sent[path, default: 0])
            let payload = [path.rawValue] + withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
            switch path {
            case .turnToPeer:
                try turn.send([UInt8(Self.channel >> 8), UInt8(Self.channel & 0xFF), 0, UInt8(payload.count)] + payload)
            case .turnToClient:
                try peer.send(payload, tos: 0, to: relayed)
            case .sessionForward:
                sessionPeers.send(from: 0, to: legs[0], payload)
            case .sessionBack:
                sessionPeers.send(from: 1, to: legs[1], payload)
            }
            sent[path, default: 0] += 1
        }
        collect()
    }

    private func collect() {
        for bytes in peerSink.drain() { note(bytes) }
        for bytes in turnSink.drain() where bytes.count > 4 { note(Array(bytes[4...])) }
        for arrival in sessionPeers.pending() { note(arrival.bytes) }
    }

    private func note(_ payload: [UInt8]) {
        guard payload.count == 5, let path = Path(rawValue: payload[0]) else { return }
        received[path, default: []].insert(payload[1...].reduce(0) { $0 << 8 | UInt32($1) })
    }

    /// Waits at most `seconds` for everything sent to arrive.
    func settle(seconds: Double = 10) {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            collect()
            if Path.allCases.allSatisfy({ received[$0, default: []].count == sent[$0, default: 0] }) { return }
            usleep(10_000)
        } while Date() < deadline
    }

    /// How many datagrams have been sent in all.
    var sentCount: Int { sent.values.reduce(0, +) }

    /// Fails the test for each path that has not relayed every datagram sent on it.
    func assertEverythingRelayed(_ context: String, file: StaticString = #filePath, line: UInt = #line) {
        for path in Path.allCases {
            XCTAssertEqual(received[path, default: []].count, sent[path, default: 0], "\(path): \(context)", file: file, line: line)
        }
    }

    var summary: String {
        Path.allCases.map { "\($0) \(received[$0, default: []].count)/\(sent[$0, default: 0])" }.joined(separator: ", ")
    }
}
