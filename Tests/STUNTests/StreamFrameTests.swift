import STUN
import XCTest

/// `StreamFrame` on byte strings: where each message ends, padding, what is not TURN, and a
/// length past the maximum refused from the header alone.
final class StreamFrameTests: XCTestCase {
    private func front(_ bytes: [UInt8], maximum: Int = 65_555, stunOnly: Bool = false) -> StreamFrame {
        bytes.withUnsafeBytes { StreamFrame.front(of: $0, maximum: maximum, stunOnly: stunOnly) }
    }

    func testSTUNEndsAtItsHeaderLength() {
        let binding = MessageBuilder(MessageType(.binding, .request), transactionID: .random()).bytes
        XCTAssertEqual(front(binding), .message(length: 20, consumed: 20))
        XCTAssertEqual(front(binding + [0x40]), .message(length: 20, consumed: 20))
        for cut in 0..<binding.count { XCTAssertEqual(front(Array(binding[0..<cut])), .incomplete, "cut at \(cut)") }
    }

    func testChannelDataIsPaddedToFourOnAStream() {
        for length in 0...8 {
            let message = [0x40, 0x00, 0x00, UInt8(length)] + [UInt8](repeating: 1, count: length)
            let padded = (message.count + 3) & ~3
            XCTAssertEqual(front(message + [UInt8](repeating: 0, count: padded - message.count)),
                           .message(length: 4 + length, consumed: padded))
            if padded > message.count { XCTAssertEqual(front(message), .incomplete, "no padding yet for \(length)") }
        }
    }

    func testWhatIsNotTURN() {
        XCTAssertEqual(front([0xC0, 0, 0, 0]), .invalid(.notTURN))
        XCTAssertEqual(front([0x16]), .invalid(.notTURN), "a TLS record, from its first byte")
        XCTAssertEqual(front([0x80, 0, 0, 0]), .invalid(.notTURN))
        XCTAssertEqual(front([0x00, 0x01, 0x00, 0x02]), .invalid(.badLength))
        XCTAssertEqual(front([0x00, 0x01, 0x00, 0x00, 1, 2, 3, 4]), .invalid(.notTURN), "no magic cookie")
        // ASCII letters start with the bits 01: text passes for ChannelData until the length says otherwise.
        XCTAssertEqual(front(Array("GET ".utf8)), .incomplete, "as ChannelData on channel 0x4745 it waits for 21,536 bytes")
        XCTAssertEqual(front(Array("GET ".utf8), stunOnly: true), .invalid(.notTURN), "ChannelData cannot come first")
    }

    /// Found by FuzzStreamFraming: a stream that is not STUN (no magic cookie) but whose
    /// length field is past the maximum was refused as too large when its first segment held
    /// 4 to 7 bytes, and as not TURN when it held 8: the reason counted for the closed
    /// connection depended on how TCP cut the bytes. The cookie is judged first now.
    func testTheVerdictOnAStreamDoesNotDependOnWhereItWasCut() {
        let header: [UInt8] = [0x00, 0x01, 0x10, 0x00, 1, 2, 3, 4]
        XCTAssertEqual(front(header, maximum: 1000), .invalid(.notTURN))
        for cut in 0..<header.count {
            let early = front(Array(header[0..<cut]), maximum: 1000)
            XCTAssertTrue(early == .incomplete || early == .invalid(.notTURN), "cut at \(cut): \(early)")
        }
    }

    func testALengthPastTheMaximumIsRefusedFromTheHeader() {
        XCTAssertEqual(front([0x40, 0x00, 0x10, 0x00], maximum: 1000), .invalid(.tooLarge))
        XCTAssertEqual(front([0x00, 0x01, 0x10, 0x00, 0x21, 0x12, 0xA4, 0x42], maximum: 1000), .invalid(.tooLarge))
    }
}
