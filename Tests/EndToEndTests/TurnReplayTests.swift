import Foundation
@testable import LoadGen
import NetAddress
import STUN
import TestPorts
import TestSupport
import XCTest

/// An authenticated Allocate captured on the wire and replayed byte for byte from another port
/// of the victim's own address (a host or NAT the attacker shares, where the nonce, bound to the
/// IP address for the fleet's sake, is valid) is refused with 438 and allocates nothing: the relay
/// remembers which 5-tuple each accepted Allocate came from for its nonce's lifetime
/// (`AcceptedAllocates`). Four workers, so that the replay usually lands on another worker than
/// the original: what is remembered is the relay's, not a worker's.
final class TurnReplayTests: XCTestCase {
    func testAllocateReplayedOverUDPFromAnotherPortIsRefused() throws {
        let turnPort = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(), [
            "--workers", "4", "--relay-address", "127.0.0.1", "--turn", "127.0.0.1:\(turnPort)",
            "--turn-realm", "replay.test", "--turn-user", "alice:secret",
        ])
        defer { XCTAssertEqual(relay.stop(), 0, relay.log) }
        let server = try XCTUnwrap(Endpoint(host: "127.0.0.1", port: turnPort))
        let victim = try TurnWireClient(server: server)
        try victim.learnChallenge()
        let captured = victim.signed(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
        let accepted = try victim.exchange(captured)
        XCTAssertEqual(accepted.messageClass, .successResponse, "\(accepted)")

        // The victim's own retransmission is answered as before: the same success.
        XCTAssertEqual(try victim.exchange(captured).bytes, accepted.bytes)

        let attacker = try TurnWireClient(server: server)
        XCTAssertNotEqual(attacker.socket.localAddress.port, victim.socket.localAddress.port)
        let replayed = try attacker.exchange(captured)
        XCTAssertEqual(replayed.errorCode?.code, 438, "the replay: \(replayed)")
        XCTAssertNotNil(try replayed.text(.nonce), "a 438 carries a fresh nonce, for a client whose NAT moved it mid-transaction")

        // Each worker publishes its own counters: the victim's and the replay's may differ.
        let stats = try relay.waitFor {
            RelayProcess.number($0, "turn", "auth_failures", "replayed") ?? 0 >= 1 && RelayProcess.number($0, "turn", "allocations_created") ?? 0 >= 1
        }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "auth_failures", "replayed"), 1, "\(stats["turn"] ?? "")")
        XCTAssertEqual(RelayProcess.number(stats, "turn", "allocations"), 1, "only the victim's: \(stats["turn"] ?? "")")
        XCTAssertEqual(RelayProcess.number(stats, "turn", "allocations_created"), 1, "\(stats["turn"] ?? "")")

        // The attacker's port may still allocate with its own nonce and a fresh transaction.
        XCTAssertEqual(try attacker.ask(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }.messageClass, .successResponse)
    }

    /// Over TCP the replay comes on a new connection (the nonce is valid there, as it must be for
    /// a client that a sibling relay sent on over a new connection), and over UDP from the same
    /// address: both refused.
    func testAllocateReplayedOnANewConnectionOrOverUDPIsRefused() throws {
        let server = try TurnStreamServerFixture(["--workers", "4"])
        let victim = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: server.tcpPort)!)
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        bare.append(.requestedTransport, [17, 0, 0, 0])
        victim.write(bare.bytes)
        let challenge = try StunMessage(bytes: XCTUnwrap(victim.readMessage(), "no answer to a bare Allocate"))
        XCTAssertEqual(challenge.errorCode?.code, 401)
        victim.nonce = try XCTUnwrap(try challenge.text(.nonce))
        victim.realm = try XCTUnwrap(try challenge.text(.realm))
        var builder = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        builder.append(.requestedTransport, [17, 0, 0, 0])
        builder.append(.username, text: victim.username)
        builder.append(.realm, text: victim.realm)
        builder.append(.nonce, text: victim.nonce)
        builder.appendIntegrity(.messageIntegrity, key: LongTermKey.derive(username: "alice", realm: victim.realm, password: "secret",
                                                                           algorithm: .md5))
        let captured = builder.bytes
        victim.write(captured)
        let accepted = try StunMessage(bytes: XCTUnwrap(victim.readMessage(), "no answer to the victim's Allocate"))
        XCTAssertEqual(accepted.messageClass, .successResponse, "\(accepted)")

        let connection = try StreamTurnClient(to: Endpoint(host: "127.0.0.1", port: server.tcpPort)!)
        connection.write(captured)
        let overTCP = try StunMessage(bytes: XCTUnwrap(connection.readMessage(), "no answer to the replay on a new connection"))
        XCTAssertEqual(overTCP.errorCode?.code, 438, "the replay on a new connection: \(overTCP)")

        let datagrams = try TurnWireClient(server: Endpoint(host: "127.0.0.1", port: server.udpPort)!)
        let overUDP = try datagrams.exchange(captured)
        XCTAssertEqual(overUDP.errorCode?.code, 438, "the replay over UDP: \(overUDP)")

        let stats = try server.relay.waitFor {
            RelayProcess.number($0, "turn", "auth_failures", "replayed") ?? 0 >= 2 && RelayProcess.number($0, "turn", "allocations_created") ?? 0 >= 1
        }
        XCTAssertEqual(RelayProcess.number(stats, "turn", "auth_failures", "replayed"), 2, "\(stats["turn"] ?? "")")
        XCTAssertEqual(RelayProcess.number(stats, "turn", "allocations"), 1, "only the victim's: \(stats["turn"] ?? "")")
    }
}
