import NetAddress
import STUN
import XCTest

/// ALTERNATE-SERVER is written in MAPPED-ADDRESS form (RFC 8489 section 14.15): the bytes as
/// the RFC lays them out, not XORed, and read back the same.
final class PlainAddressTests: XCTestCase {
    func testIPv4IsWrittenAsIsNotXORed() {
        let server = Endpoint(host: "192.0.2.1", port: 3478)!
        XCTAssertEqual(PlainAddress.encode(server), [0x00, 0x01, 0x0D, 0x96, 192, 0, 2, 1])
    }

    func testIPv6IsWrittenAsIs() {
        let server = Endpoint(host: "2001:db8::1", port: 5349)!
        XCTAssertEqual(PlainAddress.encode(server),
                       [0x00, 0x02, 0x14, 0xE5, 0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1])
    }

    func testAlternateServerRoundTripsInAMessage() throws {
        for text in ["127.0.0.2:3478", "[2001:db8::5]:3478"] {
            let server = try XCTUnwrap(Endpoint(parsing: text))
            var builder = MessageBuilder(MessageType(.allocate, .errorResponse), transactionID: .random())
            builder.append(error: .tryAlternate)
            builder.append(.alternateServer, plainAddress: server)
            let message = try StunMessage(bytes: builder.bytes)
            XCTAssertEqual(try message.plainAddress(.alternateServer), server, text)
            XCTAssertNil(try message.plainAddress(.mappedAddress))
        }
    }

    func testMalformedValuesAreRefused() {
        for bytes: [UInt8] in [[0, 1, 0, 1], [0, 1, 0, 1, 1, 2, 3], [0, 3, 0, 1, 1, 2, 3, 4], [0, 2, 0, 1, 1, 2, 3, 4]] {
            XCTAssertNil(bytes.withUnsafeBytes { PlainAddress.decode($0) }, "\(bytes)")
        }
    }
}
