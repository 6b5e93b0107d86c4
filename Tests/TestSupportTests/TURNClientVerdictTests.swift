import TestSupport
import XCTest

/// The uclient verdict on outputs captured from Debian's coturn 4.6.1 turnutils_uclient
/// (2026-11-25, against coturn's turnserver on loopback; the lossy run's RTCP half went to a
/// peer port where nothing listened).
final class TURNClientVerdictTests: XCTestCase {
    /// `-y -n 10 -m 2 -z 5 -l 160`: client to client, four sessions after rounding, all echoed.
    static let echoed = """
        0: : Total connect time is 1
        0: : Total connect time is 1
        0: : start_mclient: msz=4, tot_send_msgs=0, tot_recv_msgs=0, tot_send_bytes ~ 0, tot_recv_bytes ~ 0
        1: : start_mclient: msz=4, tot_send_msgs=0, tot_recv_msgs=0, tot_send_bytes ~ 0, tot_recv_bytes ~ 0
        2: : start_mclient: msz=4, tot_send_msgs=10, tot_recv_msgs=10, tot_send_bytes ~ 1600, tot_recv_bytes ~ 1600
        3: : start_mclient: msz=4, tot_send_msgs=17, tot_recv_msgs=16, tot_send_bytes ~ 2720, tot_recv_bytes ~ 2560
        4: : start_mclient: msz=4, tot_send_msgs=30, tot_recv_msgs=30, tot_send_bytes ~ 4800, tot_recv_bytes ~ 4800
        4: : start_mclient: tot_send_msgs=40, tot_recv_msgs=40
        4: : start_mclient: tot_send_bytes ~ 6400, tot_recv_bytes ~ 6400
        4: : Total transmit time is 4
        4: : Total lost packets 0 (0.000000%), total send dropped 0 (0.000000%)
        4: : Average round trip delay 0.000000 ms; min = 0 ms, max = 0 ms
        4: : Average jitter 1.225000 ms; min = 0 ms, max = 4 ms
        """
    static let echoedArguments = ["-u", "alice", "-w", "secret", "-y", "-n", "10", "-m", "2", "-z", "5", "-l", "160", "127.0.0.1"]

    /// `-n 10 -m 2 -z 5 -l 160`: one RTP/RTCP pair, half of it lost.
    static let lossy = """
        0: : Total connect time is 0
        0: : Total connect time is 0
        1: : start_mclient: msz=2, tot_send_msgs=0, tot_recv_msgs=0, tot_send_bytes ~ 0, tot_recv_bytes ~ 0
        4: : start_mclient: msz=2, tot_send_msgs=10, tot_recv_msgs=10, tot_send_bytes ~ 1600, tot_recv_bytes ~ 1600
        5: : start_mclient: msz=2, tot_send_msgs=20, tot_recv_msgs=10, tot_send_bytes ~ 3200, tot_recv_bytes ~ 1600
        14: : start_mclient: msz=1, tot_send_msgs=20, tot_recv_msgs=10, tot_send_bytes ~ 3200, tot_recv_bytes ~ 1600
        14: : start_mclient: tot_send_msgs=20, tot_recv_msgs=10
        14: : start_mclient: tot_send_bytes ~ 3200, tot_recv_bytes ~ 1600
        14: : Total transmit time is 14
        14: : Total lost packets 10 (50.000000%), total send dropped 0 (0.000000%)
        14: : Average round trip delay 0.000000 ms; min = 0 ms, max = 0 ms
        14: : Average jitter 1.300000 ms; min = 0 ms, max = 3 ms
        """
    static let lossyArguments = ["-u", "alice", "-w", "secret", "-n", "10", "-m", "2", "-z", "5", "-l", "160", "127.0.0.1"]

    /// `-n 10 -m 2 -z 5 -l 160` at a full mediarelay of a fleet (FleetTests, 2026-11-25): the
    /// probe Allocate answered 300, everything relayed by the alternate.
    static let redirected = """
        0: : error 300 (Try Alternate)
        0: : error 300 (Try Alternate)
        0: : Total connect time is 0
        1: : start_mclient: msz=2, tot_send_msgs=0, tot_recv_msgs=0, tot_send_bytes ~ 0, tot_recv_bytes ~ 0
        3: : start_mclient: msz=2, tot_send_msgs=10, tot_recv_msgs=10, tot_send_bytes ~ 1600, tot_recv_bytes ~ 1600
        4: : start_mclient: tot_send_msgs=20, tot_recv_msgs=20
        4: : start_mclient: tot_send_bytes ~ 3200, tot_recv_bytes ~ 3200
        4: : Total transmit time is 4
        4: : Total lost packets 0 (0.000000%), total send dropped 0 (0.000000%)
        """

    /// A wrong password: uclient gives up at the Allocate, with exit status 255.
    static let refused = """
        0: : ERROR: Cannot complete Allocation
        0: : ERROR: Cannot complete Allocation
        """

    func testEveryByteEchoedPasses() throws {
        let verdict = try XCTUnwrap(TURNClientVerdict(parsing: Self.echoed))
        XCTAssertEqual(verdict.sentBytes, 6400)
        XCTAssertEqual(verdict.receivedBytes, 6400)
        XCTAssertEqual(verdict.sentMessages, 40)
        XCTAssertEqual(verdict.receivedMessages, 40)
        XCTAssertEqual(verdict.lostPackets, 0)
        XCTAssertEqual(verdict.errors, [])
        XCTAssertEqual(TURNClientVerdict.problems(in: Self.echoed, arguments: Self.echoedArguments), [])
    }

    func testAFollowedRedirectIsNotAnError() throws {
        let verdict = try XCTUnwrap(TURNClientVerdict(parsing: Self.redirected))
        XCTAssertEqual(verdict.redirects.count, 2)
        XCTAssertEqual(verdict.errors, [])
        XCTAssertEqual(TURNClientVerdict.problems(in: Self.redirected, arguments: Self.lossyArguments), [])
        // A 300 that ended the run leaves no summary: still a failure.
        XCTAssertFalse(TURNClientVerdict.problems(in: "0: : error 300 (Try Alternate)\n", arguments: Self.lossyArguments).isEmpty)
    }

    func testARefusedOldTLSVersionThatUclientRetriesIsNotAnError() throws {
        let probed = """
            0: : tls_connect: cannot connect: rc=-1, ctx=1
            0: : errno=0, err=0, error:0A00042E:SSL routines::tlsv1 alert protocol version (1)
            0: : tls_connect: client session connected with cipher TLS_AES_256_GCM_SHA384, method=TLSv1.3
            """ + "\n" + Self.echoed
        let verdict = try XCTUnwrap(TURNClientVerdict(parsing: probed))
        XCTAssertEqual(verdict.tlsProbes.count, 2)
        XCTAssertEqual(verdict.errors, [])
        XCTAssertEqual(TURNClientVerdict.problems(in: probed, arguments: Self.echoedArguments), [])
        // Any other TLS error still fails.
        let failed = "0: : error:0A000086:SSL routines::certificate verify failed\n" + Self.echoed
        XCTAssertFalse(TURNClientVerdict.problems(in: failed, arguments: Self.echoedArguments).isEmpty)
    }

    func testAnAllocateRetriedAsANewTransactionIsNotAnErrorWhenEveryByteCameBack() throws {
        let retried = "0: : error 437 (Allocation Mismatch)\n" + Self.echoed
        let verdict = try XCTUnwrap(TURNClientVerdict(parsing: retried))
        XCTAssertEqual(verdict.retriedAllocates.count, 1)
        XCTAssertEqual(TURNClientVerdict.problems(in: retried, arguments: Self.echoedArguments), [])
        // Without the summary it is still a failure.
        XCTAssertFalse(TURNClientVerdict.problems(in: "0: : error 437 (Allocation Mismatch)\n", arguments: Self.echoedArguments).isEmpty)
    }

    func testLossFails() throws {
        let verdict = try XCTUnwrap(TURNClientVerdict(parsing: Self.lossy))
        XCTAssertEqual(verdict.lostPackets, 10)
        XCTAssertEqual(TURNClientVerdict.problems(in: Self.lossy, arguments: Self.lossyArguments),
                       ["received 1600 of 3200 bytes", "received 10 of 20 messages", "10 packets lost"])
    }

    func testAnErrorLineFailsInAnyCase() {
        XCTAssertEqual(TURNClientVerdict.problems(in: Self.refused, arguments: Self.lossyArguments), [
            "no totals followed by a loss line: uclient stopped before its summary",
            "error line: 0: : ERROR: Cannot complete Allocation", "error line: 0: : ERROR: Cannot complete Allocation",
        ])
        // Totals that look perfect do not outweigh an error, whatever its case.
        for line in ["1: : ERROR: Cannot complete Allocation", "1: : error 403 (Forbidden IP)"] {
            let output = Self.echoed.replacingOccurrences(of: "4: : Total transmit time is 4", with: line)
            XCTAssertEqual(TURNClientVerdict.problems(in: output, arguments: Self.echoedArguments), ["error line: \(line)"])
        }
    }

    /// An earlier run said "lost 0"; the last one did not: the last one counts.
    func testTheLastTotalsCount() throws {
        let both = Self.echoed + "\n" + Self.lossy
        XCTAssertEqual(TURNClientVerdict(parsing: both)?.lostPackets, 10)
        XCTAssertEqual(TURNClientVerdict(parsing: both)?.sentBytes, 3200)
        XCTAssertFalse(TURNClientVerdict.problems(in: both, arguments: Self.lossyArguments).isEmpty)
        // A later run cut short (progress lines, no loss line) leaves no verdict, not the earlier one.
        let cutShort = Self.echoed + "\n" + Self.lossy.split(separator: "\n").prefix(5).joined(separator: "\n")
        XCTAssertNil(TURNClientVerdict(parsing: cutShort))
    }

    func testTheBytesSentMustBeTheWorkloadAskedFor() {
        // The same echoed output judged against a workload of twice the messages.
        let asked = Self.echoedArguments.map { $0 == "10" ? "20" : $0 }
        XCTAssertEqual(TURNClientVerdict.problems(in: Self.echoed, arguments: asked),
                       ["sent 6400 bytes, not 12800 (4 sessions x 20 messages x 160 bytes)"])
        let unstated = Self.echoedArguments.filter { $0 != "-l" && $0 != "160" }
        XCTAssertEqual(TURNClientVerdict.problems(in: Self.echoed, arguments: unstated).count, 1)
    }

    /// uclient's rounding of -m (coturn's start_mclient), checked against its own totals on the
    /// same host: -m 1 sent 20 messages, -y -m 1 and -y -m 3 sent 40, -g -m 10 sent 100, all
    /// with -n 10.
    func testSessionsRoundAsUclientRoundsThem() {
        XCTAssertEqual(TURNClientWorkload(clients: 1, messages: 10, length: 160).sessions, 2)
        XCTAssertEqual(TURNClientWorkload(clients: 1, messages: 10, length: 160, pairs: false).sessions, 1)
        XCTAssertEqual(TURNClientWorkload(clients: 1, messages: 10, length: 160, clientToClient: true).sessions, 4)
        XCTAssertEqual(TURNClientWorkload(clients: 3, messages: 10, length: 160, clientToClient: true).sessions, 4)
        XCTAssertEqual(TURNClientWorkload(clients: 3, messages: 10, length: 160, clientToClient: true, pairs: false).sessions, 4)
        XCTAssertEqual(TURNClientWorkload(clients: 10, messages: 10, length: 160).expectedSentBytes, 16000)
        XCTAssertEqual(TURNClientWorkload(arguments: ["-m", "2", "-n", "10", "-l", "160", "-m", "10", "-g"])?.clients, 10)
    }
}
