import DatagramEngine
import TestPorts
import XCTest

/// Proves the coturn interop harness (CoturnTools.swift) before mediarelay's TURN server uses
/// it: the verdict parser on uclient's real output shapes, then real runs against coturn's own
/// `turnserver` on loopback, with a static user and with the REST secret, each passing with the
/// right credentials and failing with wrong ones, so the harness can tell the two apart.
final class CoturnHarnessTests: XCTestCase {
    func testVerdictParserReadsTheLastTotals() throws {
        let passed = """
            0: : Total connect time is 1
            0: : start_mclient: msz=2, tot_send_msgs=0, tot_recv_msgs=0, tot_send_bytes ~ 0, tot_recv_bytes ~ 0
            1: : start_mclient: msz=2, tot_send_msgs=0, tot_recv_msgs=0, tot_send_bytes ~ 0, tot_recv_bytes ~ 0
            1: : start_mclient: tot_send_msgs=40, tot_recv_msgs=40
            1: : start_mclient: tot_send_bytes ~ 6400, tot_recv_bytes ~ 6400
            1: : Total transmit time is 1
            1: : Total lost packets 0 (0.000000%), total send dropped 0 (0.000000%)
            1: : Average round trip delay 0.000000 ms; min = 0 ms, max = 0 ms
            """
        let verdict = try XCTUnwrap(TURNClientVerdict(parsing: passed))
        XCTAssertEqual(verdict, TURNClientVerdict(parsing: passed))
        XCTAssertEqual(verdict.sentBytes, 6400)
        XCTAssertEqual(verdict.receivedBytes, 6400)
        XCTAssertEqual(verdict.sentMessages, 40)
        XCTAssertEqual(verdict.receivedMessages, 40)
        XCTAssertEqual(verdict.lostPackets, 0)
        XCTAssertTrue(verdict.everyByteEchoed)

        let lossy = passed.replacingOccurrences(of: "tot_recv_bytes ~ 6400", with: "tot_recv_bytes ~ 6240")
            .replacingOccurrences(of: "Total lost packets 0", with: "Total lost packets 1")
        let lost = try XCTUnwrap(TURNClientVerdict(parsing: lossy))
        XCTAssertEqual(lost.receivedBytes, 6240)
        XCTAssertEqual(lost.lostPackets, 1)
        XCTAssertFalse(lost.everyByteEchoed)

        let failed = passed + "\n0: : ERROR: Cannot complete Allocation"
        XCTAssertEqual(TURNClientVerdict(parsing: failed)?.errors, ["0: : ERROR: Cannot complete Allocation"])
        XCTAssertFalse(TURNClientVerdict(parsing: failed)?.everyByteEchoed ?? true)

        let nothing = passed.replacingOccurrences(of: "tot_send_bytes ~ 6400, tot_recv_bytes ~ 6400", with: "tot_send_bytes ~ 0, tot_recv_bytes ~ 0")
        XCTAssertFalse(try XCTUnwrap(TURNClientVerdict(parsing: nothing)).everyByteEchoed, "nothing sent is no pass")
        XCTAssertNil(TURNClientVerdict(parsing: "0: : ERROR: Cannot complete Allocation\n"), "no totals, no verdict")
        XCTAssertNil(TURNClientVerdict(parsing: passed.replacingOccurrences(of: "Total lost packets", with: "x")))
    }

    /// uclient's small, quick workload: 2 clients, 10 messages of 160 bytes each, 5 ms apart.
    /// Without -c each client is an RTP/RTCP pair (EVEN-PORT, RESERVATION-TOKEN); uclient's
    /// byte totals count the RTP side only.
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
        XCTAssertEqual(good.verdict?.sentBytes, 2 * 10 * 160, good.summary)
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
        XCTAssertEqual(good.verdict?.sentBytes, 2 * 10 * 160, good.summary)
        XCTAssertFalse(wrong.passed, wrong.summary)
        XCTAssertTrue(wrong.output.contains("ERROR"), wrong.summary)
    }
}
