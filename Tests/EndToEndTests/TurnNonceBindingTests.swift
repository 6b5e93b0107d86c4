@testable import ClientSockets
import Foundation
@testable import LoadGen
import STUN
@testable import TurnClientKit
import XCTest

/// A nonce is bound to the client's IP address it was issued to (NonceIssuer), seen at the real
/// server: a client on another address that signs a valid Allocate with another client's nonce
/// gets 438 Stale Nonce and no allocation, while the same credentials with its own nonce
/// allocate; another port of the nonce's own address may use it (a new connection, or a NAT's
/// mapping towards a sibling relay, changes only the port).
final class TurnNonceBindingTests: XCTestCase {
    static let token = "nonce-binding-token"

    func testAllocateSignedWithAnotherClientsNonceGets438AndAllocatesNothing() throws {
        let (host, other) = ("127.0.0.1", "127.0.0.2")
        let fixture = try TurnServerFixture(hosts: [host, other], ["--turn-user", "bob:hunter2", "--control-token", Self.token])
        defer { XCTAssertEqual(fixture.relay.stop(), 0) }
        let a = try fixture.client(on: host)
        let b = try fixture.client(on: other, user: "bob", password: "hunter2")

        // A's first Allocate carries no credentials: the 401 brings A its nonce.
        let challenge = try ask(allocate(a.turn), from: a)
        XCTAssertEqual(challenge.errorCode?.code, 401)
        let nonceOfA = try XCTUnwrap(try challenge.text(.nonce))

        // B takes the realm and A's nonce, and signs with its own valid key.
        XCTAssertTrue(b.turn.learn(challenge: challenge))
        XCTAssertEqual(b.turn.nonce, nonceOfA)
        let refused = try ask(allocate(b.turn), from: b)
        XCTAssertEqual(refused.messageClass, .errorResponse)
        XCTAssertEqual(refused.errorCode?.code, 438, "another client's nonce: \(String(describing: refused.errorCode))")
        XCTAssertNotNil(try refused.text(.nonce), "a 438 brings a nonce to retry with")
        XCTAssertNotEqual(try refused.text(.nonce), nonceOfA, "B's fresh nonce is its own")

        let afterRefusal = try fixture.relay.waitFor {
            Self.turn($0, "auth_failures", "stale_nonce") >= 1 || Self.turn($0, "allocations_created") >= 1
        }
        XCTAssertEqual(Self.turn(afterRefusal, "auth_failures", "stale_nonce"), 1, "\(afterRefusal)")
        XCTAssertEqual(Self.turn(afterRefusal, "allocations_refused", "438"), 1, "\(afterRefusal)")
        XCTAssertEqual(Self.turn(afterRefusal, "allocations"), 0, "\(afterRefusal)")
        XCTAssertEqual(Self.turn(afterRefusal, "allocations_created"), 0, "\(afterRefusal)")
        XCTAssertEqual(try listedClients(fixture), [], "nothing allocated for B")

        // The same credentials with B's own nonce allocate, and A's nonce works for A: the 438
        // was for the nonce's owner alone.
        XCTAssertTrue(b.turn.learn(challenge: refused))
        XCTAssertEqual(try ask(allocate(b.turn), from: b).messageClass, .successResponse)
        XCTAssertTrue(a.turn.learn(challenge: challenge))
        XCTAssertEqual(try ask(allocate(a.turn), from: a).messageClass, .successResponse)
        let neighbour = try fixture.client(on: host, user: "bob", password: "hunter2")
        XCTAssertNotEqual(neighbour.peer.port, a.peer.port)
        XCTAssertTrue(neighbour.turn.learn(challenge: challenge))
        XCTAssertEqual(try ask(allocate(neighbour.turn), from: neighbour).messageClass, .successResponse, "A's address, another port")
        let clients = try listedClients(fixture)
        XCTAssertEqual(clients, Set([a, b, neighbour].map { $0.turn.socket.localAddress.description }))
        let afterwards = try fixture.relay.waitFor { Self.turn($0, "allocations_created") >= 3 }
        XCTAssertEqual(Self.turn(afterwards, "allocations_created"), 3, "one each, none for the refused request")
    }

    private func allocate(_ client: TurnAllocationClient) -> MessageBuilder {
        client.request(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
    }

    /// Sends `request` from `client` until the answer to its transaction comes (resent every
    /// 0.5 s, in case a loaded machine loses one; at most 10 s).
    private func ask(_ request: MessageBuilder, from client: (peer: IndependentPeer, turn: TurnAllocationClient)) throws -> StunMessage {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            try client.peer.send(request.bytes, tos: 0, to: client.turn.server)
            for arrival in client.peer.receive(expected: 1, seconds: 0.5) {
                if let answer = try? StunMessage(bytes: arrival.bytes), answer.transactionID == request.transactionID {
                    return answer
                }
            }
        }
        throw LoadError("no answer from the TURN server at \(client.turn.server)")
    }

    /// The client addresses GET /v1/turn/allocations lists.
    private func listedClients(_ fixture: TurnServerFixture) throws -> Set<String> {
        let reply = try fixture.relay.request("GET", "/v1/turn/allocations", token: Self.token)
        XCTAssertEqual(reply.status, 200, reply.text)
        let allocations = try XCTUnwrap(reply.json?["allocations"] as? [[String: Any]], reply.text)
        return Set(allocations.compactMap { $0["client"] as? String })
    }

    /// A number in /v1/stats' "turn" object (-1 when absent, so that it never passes for 0).
    static func turn(_ stats: [String: Any], _ keys: String...) -> Int {
        var value: Any? = stats["turn"]
        for key in keys { value = (value as? [String: Any])?[key] }
        return value as? Int ?? -1
    }
}
