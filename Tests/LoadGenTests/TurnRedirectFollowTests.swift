@testable import ClientSockets
import Foundation
@testable import LoadGen
import NetAddress
import STUN
@testable import TurnClientKit
import XCTest

/// The load generator's TURN client follows 300 Try Alternate as a browser does: a signed 300
/// to an Allocate sends it to ALTERNATE-SERVER, where it starts the credential dance afresh;
/// once only, and never on a 300 it cannot trust.
final class TurnRedirectFollowTests: XCTestCase {
    static let (user, password) = ("load", "pw")

    /// 401 to anything unsigned; to a signed Allocate, `signed` (with its key's realm).
    func server(realm: String, signed: @escaping @Sendable (StunMessage, [UInt8]) -> [UInt8]) throws -> ScriptedTurnServerFixture {
        try ScriptedTurnServerFixture { request in
            guard request.integrityType != nil else {
                return ScriptedTurnServerFixture.challenge(request, realm: realm, nonce: "nonce-of-\(realm)")
            }
            let key = LongTermKey.derive(username: Self.user, realm: realm, password: Self.password, algorithm: .md5)
            guard request.integrity(key: key) == .valid else { return nil }
            return signed(request, key)
        }
    }

    static func redirect(_ request: StunMessage, to alternate: SocketAddress, key: [UInt8]?) -> [UInt8] {
        var answer = MessageBuilder(MessageType(.allocate, .errorResponse), transactionID: request.transactionID)
        answer.append(error: .tryAlternate)
        answer.append(.alternateServer, plainAddress: alternate.endpoint!)
        if let key { answer.appendIntegrity(key: key) }
        return answer.bytes
    }

    static func allocated(_ request: StunMessage, key: [UInt8]) -> [UInt8] {
        var answer = MessageBuilder(MessageType(.allocate, .successResponse), transactionID: request.transactionID)
        answer.append(.xorRelayedAddress, xorAddress: Endpoint(host: "192.0.2.9", port: 50000)!)
        answer.appendIntegrity(key: key)
        return answer.bytes
    }

    func allocate(at server: SocketAddress) throws -> (TurnAllocationClient, StunMessage?) {
        let client = TurnAllocationClient(socket: try TrafficSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0), tos: 0),
                                server: server, username: Self.user, password: Self.password)
        let answers = TurnTransactions(answers: .sockets, interruptible: false).run([client], .allocate) { _, builder in
            builder.append(.requestedTransport, [17, 0, 0, 0])
        }
        return (client, answers[0])
    }

    func testASigned300IsFollowedWithFreshCredentials() throws {
        let alternate = try server(realm: "b.test") { request, key in Self.allocated(request, key: key) }
        let there = alternate.address
        let full = try server(realm: "a.test") { request, key in Self.redirect(request, to: there, key: key) }
        let (client, answer) = try allocate(at: full.address)
        XCTAssertEqual(answer?.messageClass, .successResponse)
        XCTAssertTrue(client.redirected)
        XCTAssertEqual(client.server.description, alternate.address.description, "ChannelData goes there too")
        XCTAssertEqual(alternate.requests.map { $0.integrityType != nil }, [false, true],
                       "the alternate challenged it first: its realm, not the first server's")
        XCTAssertEqual(try alternate.requests.last?.text(.realm), "b.test")
    }

    func testASecond300IsNotFollowed() throws {
        let other = try server(realm: "c.test") { request, key in Self.allocated(request, key: key) }
        let third = other.address
        let second = try server(realm: "b.test") { request, key in Self.redirect(request, to: third, key: key) }
        let next = second.address
        let first = try server(realm: "a.test") { request, key in Self.redirect(request, to: next, key: key) }
        let (client, answer) = try allocate(at: first.address)
        XCTAssertEqual(answer?.errorCode?.code, 300, "the second redirect is the answer")
        XCTAssertEqual(client.server.description, second.address.description)
        XCTAssertTrue(other.requests.isEmpty, "never bounced on")
    }

    func testAnUnsigned300IsNotTrusted() throws {
        let elsewhere = try server(realm: "b.test") { request, key in Self.allocated(request, key: key) }
        let there = elsewhere.address
        let forged = try server(realm: "a.test") { request, _ in Self.redirect(request, to: there, key: nil) }
        let (client, answer) = try allocate(at: forged.address)
        XCTAssertEqual(answer?.errorCode?.code, 300)
        XCTAssertFalse(client.redirected)
        XCTAssertTrue(elsewhere.requests.isEmpty)
    }
}
