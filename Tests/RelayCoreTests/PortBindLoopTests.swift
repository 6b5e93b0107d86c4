import DatagramEngine
@testable import RelayCore
import NetAddress
import SystemSupport
import TestPorts
import XCTest

/// The one loop that binds pool ports for session legs and TURN relayed sockets: a port another
/// process holds is skipped and goes back to the pool afterwards; other errors stop at once.
final class PortBindLoopTests: XCTestCase {
    func testAPortHeldElsewhereIsSkippedAndReturned() throws {
        let block = try PortBlock()
        let pool = PortPool(range: block.range)
        let first = block.range.lowerBound
        let squatter = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: first)!)
        var tried: [UInt16] = []
        let result = pool.bindSkippingHeld(for: .session, take: { pool.acquire() }) {
            (port: UInt16) throws(SystemCallError) -> UDPSocket in
            tried.append(port)
            return try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: port)!)
        }
        guard case .success(let bound) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(tried, [first, first + 1])
        XCTAssertEqual(bound.localEndpoint.port, first + 1)
        XCTAssertFalse(pool.isHeld(first), "the skipped port went back")
        XCTAssertTrue(pool.isHeld(first + 1))
        XCTAssertEqual(pool.held, 1)
        _ = squatter
    }

    func testOtherErrorsReturnThePortsAndStop() throws {
        let block = try PortBlock()
        let pool = PortPool(range: block.range)
        var attempts = 0
        let result = pool.bindSkippingHeld(for: .session, width: 2, take: { pool.acquirePair() }) {
            (_: UInt16) throws(SystemCallError) -> Int in
            attempts += 1
            throw SystemCallError("bind", errno: EACCES)
        }
        guard case .failure(.failed(let error)) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.errno, EACCES)
        XCTAssertEqual(attempts, 1)
        XCTAssertEqual(pool.held, 0, "both ports of the pair went back")
    }

    func testEveryPortHeldElsewhereIsExhaustion() throws {
        let block = try PortBlock()
        let pool = PortPool(range: block.range)
        let result = pool.bindSkippingHeld(for: .session, attempts: 3, take: { pool.acquire() }) {
            (_: UInt16) throws(SystemCallError) -> Int in
            throw SystemCallError("bind", errno: EADDRINUSE)
        }
        guard case .failure(.exhausted) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(pool.held, 0)
    }
}
