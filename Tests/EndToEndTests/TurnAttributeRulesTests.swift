import DatagramEngine
import Foundation
@testable import LoadGen
import NetAddress
import STUN
import TestPorts
import XCTest

/// The mediarelay executable answers requests shaped as RFC 8489 allows though few clients
/// send them: attributes appended after MESSAGE-INTEGRITY (ignored, section 14.5) and an
/// attribute repeated (the first counts, section 14). Each request leaves a plain test socket,
/// so the server sees exactly these bytes.
final class TurnAttributeRulesTests: XCTestCase {
    private var relay: RelayProcess?
    private var client: TurnWireClient!

    override func setUpWithError() throws {
        let turnPort = try FreePort.udp()
        relay = try RelayProcess(ports: PortBlock(), [
            "--relay-address", "127.0.0.1", "--turn", "127.0.0.1:\(turnPort)",
            "--turn-realm", "north.gov", "--turn-user", "alice:secret",
        ])
        client = try TurnWireClient(server: Endpoint(host: "127.0.0.1", port: turnPort)!)
    }

    override func tearDown() {
        relay?.stop()
    }

    func testAllocateWithAttributesAfterIntegritySucceeds() throws {
        try client.learnChallenge()
        var allocate = client.integrity(.allocate) { $0.append(.requestedTransport, [17, 0, 0, 0]) }
        allocate.append(.software, text: "appended after MESSAGE-INTEGRITY")
        let answer = try client.exchange(allocate.bytes)
        XCTAssertEqual(answer.messageClass, .successResponse, describe(answer))
        XCTAssertNotNil(try answer.xorAddress(.xorRelayedAddress))
        XCTAssertEqual(answer.integrity(key: client.key), .valid)

        // An unknown comprehension-required attribute there is ignored too (no 420), and a
        // FINGERPRINT after it still counts.
        var refresh = client.integrity(.refresh) { $0.append(.lifetime, uint32: 600) }
        refresh.append(AttributeType(rawValue: 0x7F01), [1, 2, 3, 4])
        refresh.appendFingerprint()
        let refreshed = try client.exchange(refresh.bytes)
        XCTAssertEqual(refreshed.messageClass, .successResponse, describe(refreshed))
        XCTAssertEqual(try refreshed.value(.lifetime, AttributeValue.uint32), 600)
        XCTAssertTrue(refreshed.index.hasFingerprint)
    }

    func testBindingWithSoftwareTwiceIsAnswered() throws {
        var binding = MessageBuilder(MessageType(.binding, .request), transactionID: .random())
        binding.append(.software, text: "first")
        binding.append(.software, text: "second")
        let answer = try client.exchange(binding.bytes)
        XCTAssertEqual(answer.type, MessageType(.binding, .successResponse), describe(answer))
        XCTAssertEqual(try answer.xorAddress(.xorMappedAddress)?.port, client.socket.localAddress.port)
    }

    func testAllocateWithRequestedTransportTwiceTakesTheFirst() throws {
        // UDP first, TCP second: answered by the first, a 442 would mean the second was read.
        let transports: (inout MessageBuilder) -> Void = {
            $0.append(.requestedTransport, [17, 0, 0, 0])
            $0.append(.requestedTransport, [6, 0, 0, 0])
        }
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        transports(&bare)
        let challenge = try client.exchange(bare.bytes)
        XCTAssertEqual(challenge.errorCode?.code, 401, describe(challenge))
        client.nonce = try XCTUnwrap(try challenge.text(.nonce))
        client.realm = try XCTUnwrap(try challenge.text(.realm))
        let answer = try client.exchange(client.signed(.allocate, transports))
        XCTAssertEqual(answer.messageClass, .successResponse, describe(answer))
        XCTAssertNotNil(try answer.xorAddress(.xorRelayedAddress))
    }

    private func describe(_ answer: StunMessage) -> String {
        let error = (try? answer.value(.errorCode, AttributeValue.errorCode)).flatMap { $0 }
        return "\(answer.type) \(error.map { "\($0.code) \($0.reason)" } ?? "")"
    }
}
