import DatagramEngine
import Foundation
import STUN
import TestPorts
import XCTest

/// The mediarelay executable answers requests shaped as RFC 8489 allows though few clients
/// send them: attributes appended after MESSAGE-INTEGRITY (ignored, section 14.5) and an
/// attribute repeated (the first counts, section 14). Each request leaves a plain test socket,
/// so the server sees exactly these bytes.
final class TurnAttributeRulesTests: XCTestCase {
    let key = LongTermKey.derive(username: "alice", realm: "north.gov", password: "secret")
    private var relay: RelayProcess?
    private var client: Peers!
    private var server: Endpoint!

    override func setUpWithError() throws {
        let turnPort = try freeUDPPort()
        relay = try RelayProcess(ports: PortBlock(), [
            "--relay-address", "127.0.0.1", "--turn", "127.0.0.1:\(turnPort)",
            "--turn-realm", "north.gov", "--turn-user", "alice:secret",
        ])
        client = try Peers(count: 1)
        server = Endpoint(host: "127.0.0.1", port: turnPort)!
    }

    override func tearDown() {
        relay?.stop()
    }

    func testAllocateWithAttributesAfterIntegritySucceeds() throws {
        let nonce = try challenge()
        var allocate = signed(.allocate, nonce: nonce) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
        allocate.append(.software, text: "appended after MESSAGE-INTEGRITY")
        let answer = try exchange(allocate)
        XCTAssertEqual(answer.messageClass, .successResponse, describe(answer))
        XCTAssertNotNil(try answer.xorAddress(.xorRelayedAddress))
        XCTAssertEqual(answer.integrity(key: key), .valid)

        // An unknown comprehension-required attribute there is ignored too (no 420), and a
        // FINGERPRINT after it still counts.
        var refresh = signed(.refresh, nonce: nonce) { $0.append(.lifetime, uint32: 600) }
        refresh.append(AttributeType(rawValue: 0x7F01), [1, 2, 3, 4])
        refresh.appendFingerprint()
        let refreshed = try exchange(refresh)
        XCTAssertEqual(refreshed.messageClass, .successResponse, describe(refreshed))
        XCTAssertEqual(try refreshed.value(.lifetime, AttributeValue.uint32), 600)
        XCTAssertTrue(refreshed.index.hasFingerprint)
    }

    func testBindingWithSoftwareTwiceIsAnswered() throws {
        var binding = MessageBuilder(MessageType(.binding, .request), transactionID: .random())
        binding.append(.software, text: "first")
        binding.append(.software, text: "second")
        let answer = try exchange(binding)
        XCTAssertEqual(answer.type, MessageType(.binding, .successResponse), describe(answer))
        XCTAssertEqual(try answer.xorAddress(.xorMappedAddress), client.address(0))
    }

    func testAllocateWithRequestedTransportTwiceTakesTheFirst() throws {
        // UDP first, TCP second: answered by the first, a 442 would mean the second was read.
        let transports: (inout MessageBuilder) -> Void = {
            $0.append(.requestedTransport, [17, 0, 0, 0])
            $0.append(.requestedTransport, [6, 0, 0, 0])
        }
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        transports(&bare)
        let challenge = try exchange(bare)
        XCTAssertEqual(try challenge.value(.errorCode, AttributeValue.errorCode)?.code, 401, describe(challenge))
        let nonce = try XCTUnwrap(try challenge.text(.nonce))
        let answer = try exchange(signed(.allocate, nonce: nonce, transports))
        XCTAssertEqual(answer.messageClass, .successResponse, describe(answer))
        XCTAssertNotNil(try answer.xorAddress(.xorRelayedAddress))
    }

    // MARK: helpers

    /// The nonce of the 401 to a bare Allocate.
    private func challenge() throws -> String {
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        bare.append(.requestedTransport, [17, 0, 0, 0])
        let answer = try exchange(bare)
        XCTAssertEqual(try answer.value(.errorCode, AttributeValue.errorCode)?.code, 401, describe(answer))
        return try XCTUnwrap(try answer.text(.nonce))
    }

    /// A request with `body`'s attributes, then alice's credentials and MESSAGE-INTEGRITY.
    private func signed(_ method: STUN.Method, nonce: String, _ body: (inout MessageBuilder) -> Void) -> MessageBuilder {
        var builder = MessageBuilder(MessageType(method, .request), transactionID: .random())
        body(&builder)
        builder.append(.username, text: "alice")
        builder.append(.realm, text: "north.gov")
        builder.append(.nonce, text: nonce)
        builder.appendIntegrity(key: key)
        return builder
    }

    /// Sends `request` as built and waits for the answer with its transaction id (the deadline
    /// only bounds a failing test: a dropped request is what the old codec did).
    private func exchange(_ request: MessageBuilder) throws -> StunMessage {
        client.send(from: 0, to: server, request.bytes)
        let arrivals = client.collect(expected: 1, seconds: 5) {
            (try? StunMessage(bytes: $0.bytes))?.transactionID == request.transactionID
        }
        let reply = try XCTUnwrap(arrivals.lazy.compactMap { try? StunMessage(bytes: $0.bytes) }
            .first { $0.transactionID == request.transactionID }, "no answer\n\(relay?.log ?? "")")
        return reply
    }

    private func describe(_ answer: StunMessage) -> String {
        let error = (try? answer.value(.errorCode, AttributeValue.errorCode)).flatMap { $0 }
        return "\(answer.type) \(error.map { "\($0.code) \($0.reason)" } ?? "")"
    }
}
