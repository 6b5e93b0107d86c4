import DatagramEngine
@testable import RelayCore
import NetAddress
import XCTest

/// A leg never latches onto one of the relay's own sockets: two legs latched onto each other
/// (by spoofed first datagrams) would forward to each other without end.
final class LatchTests: XCTestCase {
    func testALegRefusesToLatchOntoAnotherLegOfTheRelay() throws {
        var settings = RelaySettings(ports: 44300...44399, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.engine = EngineConfiguration(backend: .mmsg)
        let worker = try Worker(shared: WorkerShared(index: 0), settings: settings, ruleShares: [])
        defer { worker.shutDown() }
        guard case .success(let first) = worker.sessions.create(SessionRequest(), id: "s-a"),
              case .success(let second) = worker.sessions.create(SessionRequest(), id: "s-b") else { return XCTFail() }
        let otherLeg = second.legs[1].address           // 127.0.0.1 and a port this relay holds
        XCTAssertTrue(worker.sessions.isRelayOwn(otherLeg))
        XCTAssertFalse(worker.sessions.latch(0, otherLeg), "refused")
        XCTAssertEqual(worker.sessions.legs[0].counters.drops[.sourceNotAllowed], 1)
        XCTAssertNil(worker.sessions.legs[0].latched)
        // An ordinary peer on loopback, on a port the relay does not hold, latches.
        let peer = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint
        XCTAssertFalse(worker.sessions.isRelayOwn(peer))
        XCTAssertTrue(worker.sessions.latch(0, peer))
        XCTAssertEqual(first.legs.count, 2)
    }
}
