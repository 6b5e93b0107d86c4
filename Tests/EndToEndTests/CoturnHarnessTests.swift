import DatagramEngine
import TestPorts
import TestSupport
import XCTest

/// Proves the coturn interop harness (CoturnTools.swift) before mediarelay's TURN server uses
/// it: real runs against coturn's own `turnserver` on loopback, with a static user and with the
/// REST secret, each passing with the right credentials and failing with wrong ones, so the
/// harness can tell the two apart. (The verdict itself is tested on captured outputs in
/// TestSupportTests.)
final class CoturnHarnessTests: XCTestCase {
    /// uclient's small, quick workload: 2 sessions, 10 messages of 160 bytes each, 5 ms apart.
    /// Without -c the two are one RTP/RTCP pair (EVEN-PORT, RESERVATION-TOKEN), both sending.
    private let workload = ["-m", "2", "-n", "10", "-l", "160", "-z", "5"]

    func testHarnessAgainstCoturnWithAStaticUser() throws {
        try Coturn.requireTools([Coturn.peerTool, Coturn.clientTool, Coturn.serverTool])
        let peer = try TURNEchoPeer()
        defer { peer.stop() }
        let server = try CoturnServer(credentials: .user(name: "alice", password: "wonderland"), relayPorts: PortBlock())
        defer { server.stop() }

        let runs = try TURNClientRun.runTogether(server: server.endpoint, peer: peer.endpoint, flagSets: [
            ["-u", "alice", "-w", "wonderland"] + workload,
            ["-u", "alice", "-w", "not-the-password"] + workload,
        ])
        let (good, wrong) = (runs[0], runs[1])
        XCTAssertTrue(good.passed, good.summary)
        XCTAssertFalse(wrong.passed, wrong.summary)
        XCTAssertTrue(wrong.output.contains("ERROR"), wrong.summary)
    }

    func testHarnessAgainstCoturnWithTheRESTSecretOverSendIndications() throws {
        try Coturn.requireTools([Coturn.peerTool, Coturn.clientTool, Coturn.serverTool])
        let peer = try TURNEchoPeer()
        defer { peer.stop() }
        let server = try CoturnServer(credentials: .restSecret("north-wind"), relayPorts: PortBlock())
        defer { server.stop() }

        let runs = try TURNClientRun.runTogether(server: server.endpoint, peer: peer.endpoint, flagSets: [
            ["-u", "bob", "-W", "north-wind", "-s", "-c"] + workload,
            ["-u", "bob", "-W", "south-wind", "-s", "-c"] + workload,
        ])
        let (good, wrong) = (runs[0], runs[1])
        XCTAssertTrue(good.passed, good.summary)
        XCTAssertFalse(wrong.passed, wrong.summary)
        XCTAssertTrue(wrong.output.contains("ERROR"), wrong.summary)
    }
}
