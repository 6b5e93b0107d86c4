import DatagramEngine
@testable import RelayCore
import NetAddress
import XCTest

/// Who may take a latched leg once it has gone silent: by default only a source with the
/// latched peer's address (a NAT rebinding), never a stranger after a receive-only leg's media.
/// The worker's clock is moved by hand, so no test waits for relatch_after_seconds.
final class RelatchTests: XCTestCase {
    let peer = Endpoint(host: "127.0.0.1", port: 50_000)!
    let rebound = Endpoint(host: "127.0.0.1", port: 50_002)!
    let stranger = Endpoint(host: "127.0.0.2", port: 50_000)!

    /// A worker with one session of `policy`, leg 0 latched onto `peer` and then silent for
    /// 2 s with relatch_after_seconds 1.
    func silentLeg(_ policy: RelatchPolicy) throws -> Worker {
        var settings = RelaySettings(ports: 45300...45399, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.engine = EngineConfiguration(backend: .mmsg)
        let worker = try Worker(shared: WorkerShared(index: 0), settings: settings, ruleShares: [])
        var request = SessionRequest()
        request.relatch = policy
        request.relatchAfterSeconds = 1
        guard case .success = worker.sessions.create(request, id: "s-relatch") else { throw RelayError.portsExhausted }
        XCTAssertTrue(worker.sessions.latch(0, peer))
        worker.sessions.legs[0].lastHeard = worker.sessions.now
        worker.clock.now &+= 2_000_000_000
        return worker
    }

    func testDefaultFollowsANewPortButNotANewAddress() throws {
        XCTAssertEqual(SessionRequest().relatch, .sameAddress)
        let worker = try silentLeg(.sameAddress)
        defer { worker.shutDown() }
        XCTAssertFalse(worker.sessions.latch(0, stranger), "another address may not take a silent leg")
        XCTAssertEqual(worker.sessions.legs[0].latched, peer)
        XCTAssertEqual(worker.sessions.legs[0].counters.drops[.hijack], 1)
        XCTAssertTrue(worker.sessions.latch(0, rebound), "the same address on a new port is a NAT rebinding")
        XCTAssertEqual(worker.sessions.legs[0].latched, rebound)
        XCTAssertEqual(worker.sessions.legs[0].counters.relatches, 1)
    }

    func testAnyLetsEverySourceTakeASilentLegButNotATalkingOne() throws {
        let worker = try silentLeg(.any)
        defer { worker.shutDown() }
        worker.sessions.legs[0].lastHeard = worker.sessions.now  // talking
        XCTAssertFalse(worker.sessions.latch(0, stranger))
        worker.clock.now &+= 2_000_000_000
        XCTAssertTrue(worker.sessions.latch(0, stranger))
        XCTAssertEqual(worker.sessions.legs[0].latched, stranger)
    }

    func testNeverKeepsTheFirstSource() throws {
        let worker = try silentLeg(.never)
        defer { worker.shutDown() }
        XCTAssertFalse(worker.sessions.latch(0, rebound))
        XCTAssertFalse(worker.sessions.latch(0, stranger))
        XCTAssertEqual(worker.sessions.legs[0].latched, peer)
        XCTAssertEqual(worker.sessions.legs[0].counters.drops[.hijack], 2)
    }

    func testIPv6AddressesCompareWholeAndWithScope() {
        let a = Endpoint(host: "2001:db8::1", port: 1)!
        XCTAssertTrue(RelatchPolicy.sameAddress.allows(from: a, to: Endpoint(host: "2001:db8::1", port: 2)!))
        XCTAssertFalse(RelatchPolicy.sameAddress.allows(from: a, to: Endpoint(host: "2001:db8::2", port: 1)!))
        XCTAssertFalse(RelatchPolicy.sameAddress.allows(from: a, to: Endpoint(host: "2001:db9::1", port: 1)!))
        let linkLocal = Endpoint(high: 0xFE80_0000_0000_0000, low: 1, port: 1, scope: 1)
        XCTAssertFalse(RelatchPolicy.sameAddress.allows(from: linkLocal, to: Endpoint(high: 0xFE80_0000_0000_0000, low: 1, port: 1, scope: 2)))
    }
}
