@testable import ClientSockets
import XCTest
@testable import LoadGen

final class PayloadHeaderTests: XCTestCase {
    func testRoundTrip() {
        var buffer = [UInt8](repeating: 0xFF, count: 64)
        let h = PayloadHeader(stream: 0xDEAD_BEEF, sequence: 0x0102_0304_0506_0708, sendTime: 123_456_789_012, tos: 0xB8 | 2)
        buffer.withUnsafeMutableBytes { h.encode(into: $0.baseAddress!) }
        XCTAssertEqual(Array(buffer[0..<4]), Array("MRLG".utf8), "magic reads MRLG on the wire")
        XCTAssertEqual(Array(buffer[25..<32]), [0, 0, 0, 0, 0, 0, 0])
        let back = buffer.withUnsafeBytes { PayloadHeader.decode($0.baseAddress!, length: 64) }
        XCTAssertEqual(back, h)
        // Unaligned buffers decode too (the receive buffer may be offset).
        let shifted = [0] + buffer
        XCTAssertEqual(shifted.withUnsafeBytes { PayloadHeader.decode($0.baseAddress! + 1, length: 64) }, h)
    }

    func testRejectsShortAndForeign() {
        var buffer = [UInt8](repeating: 0, count: 32)
        PayloadHeader(stream: 1, sequence: 2, sendTime: 3, tos: 4).encode(into: &buffer)
        XCTAssertNil(buffer.withUnsafeBytes { PayloadHeader.decode($0.baseAddress!, length: 31) })
        buffer[0] = 0
        XCTAssertNil(buffer.withUnsafeBytes { PayloadHeader.decode($0.baseAddress!, length: 32) })
    }
}
