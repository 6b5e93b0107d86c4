import NetAddress
@testable import RelayCore
import STUN
import XCTest

/// The record of accepted Allocates: a replay from another 5-tuple refused, the sender's own
/// retransmission accepted, and at its bound the horizon that keeps a forgotten request from
/// being replayed.
final class AcceptedAllocatesTests: XCTestCase {
    let nonces = NonceIssuer(lifetime: 600)
    let victim = AcceptedAllocates.Sender(address: Endpoint(host: "192.0.2.10", port: 5000)!, overStream: false)

    func testAReplayFromAnotherPortOrTransportIsRefusedAndTheSendersOwnIsNot() {
        var record = AcceptedAllocates(capacity: 4)
        let request = Self.request(1)
        XCTAssertEqual(record.admit(request, from: victim, nonceIssued: 1000, second: 1001, nonces: nonces), .accepted)
        XCTAssertEqual(record.admit(request, from: victim, nonceIssued: 1000, second: 1100, nonces: nonces), .accepted,
                       "a late retransmission from its own 5-tuple")
        var otherPort = victim
        otherPort.address.port = 5001
        XCTAssertEqual(record.admit(request, from: otherPort, nonceIssued: 1000, second: 1100, nonces: nonces), .replayed)
        var overStream = victim
        overStream.overStream = true
        XCTAssertEqual(record.admit(request, from: overStream, nonceIssued: 1000, second: 1100, nonces: nonces), .replayed)
        XCTAssertEqual(record.admit(Self.request(1, mac: 2), from: otherPort, nonceIssued: 1000, second: 1100, nonces: nonces), .accepted,
                       "the same transaction ID under another MAC is another request")
        XCTAssertEqual(record.count, 2)
    }

    func testForgettingAValidRequestMovesTheHorizonToItsNonce() {
        var record = AcceptedAllocates(capacity: 2)
        XCTAssertEqual(record.admit(Self.request(1), from: victim, nonceIssued: 1000, second: 1000, nonces: nonces), .accepted)
        XCTAssertEqual(record.admit(Self.request(2), from: victim, nonceIssued: 1005, second: 1005, nonces: nonces), .accepted)
        // The third forgets the first, whose nonce is still valid: nonces up to its second go.
        XCTAssertEqual(record.admit(Self.request(3), from: victim, nonceIssued: 1010, second: 1010, nonces: nonces), .accepted)
        XCTAssertEqual(record.count, 2)
        var attacker = victim
        attacker.address.port = 6000
        XCTAssertEqual(record.admit(Self.request(1), from: attacker, nonceIssued: 1000, second: 1011, nonces: nonces), .pastHorizon)
        XCTAssertEqual(record.admit(Self.request(4), from: attacker, nonceIssued: 1000, second: 1011, nonces: nonces), .pastHorizon)
        XCTAssertEqual(record.admit(Self.request(5), from: attacker, nonceIssued: 1001, second: 1011, nonces: nonces), .accepted)
        XCTAssertEqual(record.admit(Self.request(2), from: attacker, nonceIssued: 1005, second: 1011, nonces: nonces), .pastHorizon,
                       "forgotten by the fifth: its nonce is at the horizon now")
    }

    func testForgettingAStaleRequestLeavesTheHorizonWhereItWas() {
        var record = AcceptedAllocates(capacity: 1)
        XCTAssertEqual(record.admit(Self.request(1), from: victim, nonceIssued: 1000, second: 1000, nonces: nonces), .accepted)
        // Its nonce has expired by now, so forgetting it costs nothing.
        XCTAssertEqual(record.admit(Self.request(2), from: victim, nonceIssued: 1650, second: 1650, nonces: nonces), .accepted)
        XCTAssertEqual(record.admit(Self.request(3), from: victim, nonceIssued: 1640, second: 1651, nonces: nonces), .accepted,
                       "no horizon: the first's nonce was stale when it was forgotten")
        // The second was forgotten valid: horizon 1650, until a nonce of that second is stale.
        XCTAssertEqual(record.admit(Self.request(4), from: victim, nonceIssued: 1650, second: 1652, nonces: nonces), .pastHorizon)
        XCTAssertEqual(record.admit(Self.request(5), from: victim, nonceIssued: 1651, second: 1652, nonces: nonces), .accepted,
                       "a nonce issued after the horizon")
    }

    func testTheRequestIsTheTransactionAndTheMACOfEitherIntegrity() throws {
        for integrity in [AttributeType.messageIntegrity, .messageIntegritySHA256] {
            var builder = MessageBuilder(MessageType(.allocate, .request), transactionID: TransactionID(high: 7, low: 9))
            builder.append(.requestedTransport, [17, 0, 0, 0])
            builder.appendIntegrity(integrity, key: Array("key".utf8))
            let message = try StunMessage(bytes: builder.bytes)
            let request = try XCTUnwrap(AcceptedAllocates.Request(message))
            XCTAssertEqual(request.transaction, TransactionID(high: 7, low: 9))
            let slot = try XCTUnwrap(message.index.first(integrity))
            XCTAssertEqual(request.mac, message.bytes[slot.offset..<(slot.offset + 8)].reduce(0) { $0 << 8 | UInt64($1) })
        }
        let unsigned = try StunMessage(bytes: MessageBuilder(MessageType(.allocate, .request), transactionID: .random()).bytes)
        XCTAssertNil(AcceptedAllocates.Request(unsigned))
    }

    private static func request(_ transaction: UInt64, mac: UInt64 = 1) -> AcceptedAllocates.Request {
        var builder = MessageBuilder(MessageType(.allocate, .request), transactionID: TransactionID(high: 0, low: transaction))
        builder.appendIntegrity(.messageIntegrity, key: [1])
        var request = AcceptedAllocates.Request(try! StunMessage(bytes: builder.bytes))!
        request.mac = mac
        return request
    }
}
