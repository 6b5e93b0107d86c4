import DatagramEngine
@testable import RelayCore
import NetAddress
import XCTest

/// Under a wildcard relay address the relay's sockets (session legs, TURN relayed sockets) send
/// from the host's interface addresses: a leg must count those as the relay's own too, as the
/// TURN peer policy does, or it latches onto another leg of the relay.
final class WildcardLatchTests: XCTestCase {
    func testALegRefusesAnotherLegSeenFromAnInterfaceAddress() throws {
        // The interface address is only compared, never bound: a documentation address will do.
        let interface = Endpoint(host: "203.0.113.9", port: 0)!
        var settings = RelaySettings(ports: 44400...44499, relayAddress: Endpoint(ipv4: 0, port: 0))
        settings.hostAddresses = [interface]
        settings.engine = EngineConfiguration(backend: .mmsg)
        let worker = try Worker(shared: WorkerShared(index: 0), settings: settings, ruleShares: [])
        defer { worker.shutDown() }
        guard case .success = worker.sessions.create(SessionRequest(), id: "s-a"),
              case .success(let second) = worker.sessions.create(SessionRequest(), id: "s-b") else { return XCTFail() }
        var otherLeg = interface
        otherLeg.port = second.legs[1].address.port      // a port this relay holds, on its interface
        XCTAssertFalse(worker.sessions.latch(0, otherLeg), "refused")
        XCTAssertEqual(worker.sessions.legs[0].counters.drops[.sourceNotAllowed], 1)
        XCTAssertNil(worker.sessions.legs[0].latched)
        // The same port on an address that is not this host's is an ordinary peer.
        var stranger = Endpoint(host: "198.51.100.7", port: 0)!
        stranger.port = otherLeg.port
        XCTAssertTrue(worker.sessions.latch(0, stranger))
    }
}
