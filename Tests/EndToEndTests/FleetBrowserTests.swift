import Foundation
import Glibc
@testable import LoadGen
import NetAddress
import STUN
@testable import TurnClientKit
import XCTest

/// A browser across the fleet (issue 32): a client that allocates as libwebrtc does
/// (`BrowserTurnClient`: signed once it has its hash, no retry after 438 or a second 401) is
/// sent on by a full relay and by a draining one, signs its Allocate to the sibling with the
/// realm and nonce the 300 brought, allocates there, and relays through it. The relays share
/// nothing but the REST secret, from which their nonce key comes.
final class FleetBrowserTests: XCTestCase {
    func testABrowserSentOnByAFullRelayAndByADrainingOneAllocatesOnTheSibling() throws {
        let fleet = try FleetFixture(extra: [["--turn-max-allocations", "1"], ["--drain-seconds", "4"], []])
        defer { fleet.stop() }
        let resident = try fleet.client(of: 0)
        XCTAssertEqual(resident.allocate()?.messageClass, .successResponse)
        XCTAssertEqual(fleet.index(of: resident.server), 0)

        // The first relay is full: 401, the signed Allocate, 300 to the second, allocated there.
        let browser = try browserClient(of: fleet.members[0].turn)
        let outcome = browser.allocate()
        guard case .allocated(let relayed) = outcome else { return XCTFail("full relay: \(outcome)") }
        XCTAssertEqual(fleet.index(of: browser.server), 1, "the first relay names the second first")
        XCTAssertEqual(browser.tried.count, 2)
        XCTAssertTrue(browser.hasHash, "it authenticated with the first relay before the redirect")
        try assertRelays(browser, to: relayed)
        let full = try fleet.members[0].relay.waitFor { RelayProcess.number($0, "turn", "redirects", "capacity") == 1 }
        XCTAssertEqual(RelayProcess.number(full, "turn", "redirects", "capacity"), 1)

        // The second drains: a new browser there is sent to the third, which takes it.
        let second = fleet.members[1].relay
        kill(second.process.processIdentifier, SIGTERM)
        _ = try second.waitFor("/readyz") { $0["reason"] as? String == "draining" }
        let late = try browserClient(of: fleet.members[1].turn)
        let lateOutcome = late.allocate()
        guard case .allocated(let lateRelayed) = lateOutcome else { return XCTFail("draining relay: \(lateOutcome)") }
        XCTAssertEqual(fleet.index(of: late.server), 2, "the draining relay names the third first")
        try assertRelays(late, to: lateRelayed)
        let drained = try second.waitFor { RelayProcess.number($0, "turn", "redirects", "draining") == 1 }
        XCTAssertEqual(RelayProcess.number(drained, "turn", "redirects", "draining"), 1)
        let third = try fleet.members[2].relay.waitFor { RelayProcess.number($0, "turn", "allocations_created") == 1 }
        XCTAssertEqual(RelayProcess.number(third, "turn", "auth_failures", "stale_nonce"), 0, "the first relay's nonce was good")
    }

    /// Siblings whose nonce keys differ (`--turn-nonce-secret` set apart on each): the browser
    /// is sent on, signs with the first relay's nonce, gets 438 and gives up, as Chromium did
    /// before relays shared their nonces.
    func testWithoutASharedNonceKeyTheBrowserGivesUpOnTheSibling() throws {
        let fleet = try FleetFixture(extra: [["--turn-max-allocations", "1", "--turn-nonce-secret", "first"],
                                             ["--turn-nonce-secret", "second"], []])
        defer { fleet.stop() }
        XCTAssertEqual(try fleet.client(of: 0).allocate()?.messageClass, .successResponse)
        let browser = try browserClient(of: fleet.members[0].turn)
        XCTAssertEqual(browser.allocate(), .failed("438 on \(fleet.members[1].turn)"))
        let second = try fleet.members[1].relay.waitFor { RelayProcess.number($0, "turn", "auth_failures", "stale_nonce") == 1 }
        XCTAssertEqual(RelayProcess.number(second, "turn", "allocations_created"), 0)
    }

    private func browserClient(of server: Endpoint) throws -> BrowserTurnClient {
        let login = TurnCredential.secret(FleetFixture.secret).login(validUntil: UInt64(time(nil)) + 3600)
        return try BrowserTurnClient(server: server, username: login.username, password: login.password)
    }

    /// A permission for a peer on loopback and a Send indication through the allocation, which
    /// the peer receives from `relayed`.
    private func assertRelays(_ browser: BrowserTurnClient, to relayed: Endpoint, file: StaticString = #filePath, line: UInt = #line) throws {
        let peer = try IndependentPeer(host: "127.0.0.1")
        let peerAddress = Endpoint(host: "127.0.0.1", port: peer.port)!
        XCTAssertEqual(try browser.wire.permit(peerAddress).messageClass, .successResponse, file: file, line: line)
        try browser.wire.sendIndication(to: peerAddress, [7, 7])
        let arrivals = peer.receive(expected: 1)
        XCTAssertEqual(arrivals.map(\.bytes), [[7, 7]], file: file, line: line)
        XCTAssertEqual(arrivals.first?.source.description, relayed.description, "from the relayed address", file: file, line: line)
    }
}
