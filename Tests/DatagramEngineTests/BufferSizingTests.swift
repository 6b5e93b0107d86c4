import DatagramEngine
import XCTest

/// Receive buffers follow --max-datagram-size without running away: io_uring's provided
/// buffers shrink in number as they grow in size, stay aligned, and never drop below two
/// receive batches. (A 65,507-byte size once left every buffer's header misaligned, which
/// crashed the first receive.)
final class BufferSizingTests: XCTestCase {
    func testIOURingBuffersStayWithinTheirBudgetAndAligned() {
        for size in [512, 2048, 9000, 9001, 65_507] {
            let configuration = EngineConfiguration(maxDatagramSize: size)
            let count = configuration.uringBufferCount
            XCTAssertEqual(configuration.uringBufferSize % 64, 0, "\(size)")
            XCTAssertGreaterThanOrEqual(configuration.uringBufferSize, size + 64, "header and payload fit")
            XCTAssertEqual(count & (count - 1), 0, "a power of two")
            XCTAssertGreaterThanOrEqual(count, configuration.batchSize * 2)
            XCTAssertLessThanOrEqual(configuration.receiveBufferBytes(.uring), configuration.uringBufferBytes, "\(size)")
            XCTAssertEqual(configuration.receiveBufferBytes(.perPacket), 64 * size)
            XCTAssertEqual(configuration.receiveBufferBytes(.mmsg), 64 * 65_536, "GRO buffers take a whole burst")
            var withoutGRO = configuration
            withoutGRO.gro = false
            XCTAssertEqual(withoutGRO.receiveBufferBytes(.mmsg), 64 * size)
        }
        XCTAssertEqual(EngineConfiguration(gro: false, maxDatagramSize: 2048).uringBufferCount, 4096, "small datagrams keep every buffer")
        XCTAssertEqual(EngineConfiguration(gro: false, maxDatagramSize: 65_507).uringBufferCount, 256)
        // With GRO every buffer takes a whole burst, whatever the datagram size: 256 of them.
        for size in [512, 2048, 9000] {
            let configuration = EngineConfiguration(gro: true, maxDatagramSize: size)
            XCTAssertGreaterThanOrEqual(configuration.uringBufferSize, 65_536 + 64, "\(size)")
            XCTAssertEqual(configuration.uringBufferCount, 256, "\(size)")
        }
        // Two batches of the largest datagrams outweigh the budget: the batches win.
        let big = EngineConfiguration(batchSize: 1024, maxDatagramSize: 65_507)
        XCTAssertEqual(big.uringBufferCount, 2048)
    }
}
