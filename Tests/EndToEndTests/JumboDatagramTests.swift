import DatagramEngine
import Foundation
import Glibc
import NetAddress
import TestPorts
import XCTest

/// Datagrams up to --max-datagram-size cross the relay whole, with their marks, on every
/// engine: jumbo frames (9,000 bytes) by default, up to 65,507 bytes (the largest UDP payload
/// over IPv4) when asked. One byte more is dropped, counted as truncated and logged with its
/// size and source port.
final class JumboDatagramTests: XCTestCase {
    let engines = [("perpacket", "off"), ("mmsg", "on"), ("uring", "off"), ("uring", "on")]

    func testJumboFramesPassByDefaultAndOneByteMoreIsCountedAndLogged() throws {
        for (engine, gso) in engines {
            let relay = try RelayProcess(ports: PortBlock(count: 50), ["--engine", engine, "--gso", gso])
            defer { XCTAssertEqual(relay.stop(), 0, relay.log) }
            let (peers, session) = try latchedPair(relay)
            XCTAssertEqual(try forward(peers, session, sizes: [9000, 9000, 9000, 9000]), [9000, 9000, 9000, 9000], "\(engine) gso \(gso)")

            peers.send(from: 0, to: session.legs[0], pattern(9001))
            try waitUntil { ((try relay.stats()["drops"] as? [String: Any])?["truncated"] as? Int) == 1 }
            try waitUntil { relay.log.contains("9001 bytes from port \(peers.address(0).port)") }
            // Counted in the turn that read it: anything forwarded would be waiting by now.
            XCTAssertEqual(peers.pending().map(\.bytes.count), [], "\(engine): nothing of it forwarded")
            // The log is rate-limited (one per minute); the counter counts every one.
            peers.send(from: 0, to: session.legs[0], pattern(9002))
            try waitUntil { ((try relay.stats()["drops"] as? [String: Any])?["truncated"] as? Int) == 2 }
            try waitForATruncationCheck(relay)
            XCTAssertFalse(relay.log.contains("9002 bytes"), "\(engine): at most one line a minute")
        }
    }

    func testTheLargestIPv4DatagramPassesWhenAskedFor() throws {
        for (engine, gso) in engines {
            let relay = try RelayProcess(ports: PortBlock(count: 50), ["--engine", engine, "--gso", gso, "--max-datagram-size", "65507"])
            defer { XCTAssertEqual(relay.stop(), 0, relay.log) }
            let (peers, session) = try latchedPair(relay)
            XCTAssertEqual(try forward(peers, session, sizes: [65507, 9000, 65507, 1]), [65507, 9000, 65507, 1], "\(engine) gso \(gso)")
            XCTAssertEqual((try relay.stats()["drops"] as? [String: Any])?["truncated"] as? Int, 0)
        }
    }

    /// Returns once the relay's main thread has looked at the truncation counts since the caller
    /// saw them change, so a line it wrongly wrote would be in the log. It looks once a second
    /// and in the same loop turn as it handles a SIGHUP, after the reload's own line ("no file
    /// to reload", without --config). When the second of two SIGHUPs has its line, the turn of
    /// the first has made its check and written anything it had to.
    private func waitForATruncationCheck(_ relay: RelayProcess) throws {
        let marker = "no file to reload"
        let before = relay.log.components(separatedBy: marker).count - 1
        for step in 1...2 {
            kill(relay.process.processIdentifier, SIGHUP)
            try waitUntil { relay.log.components(separatedBy: marker).count - 1 >= before + step }
        }
    }

    /// A session whose two legs are latched by two peers that can take 65,507-byte datagrams.
    private func latchedPair(_ relay: RelayProcess) throws -> (Peers, (id: String, legs: [Endpoint])) {
        let session = try relay.createSession()
        let peers = try Peers(count: 2, maxDatagramSize: 65_507)
        peers.send(from: 1, to: session.legs[1], [0])
        try waitUntil { try relay.request("GET", "/v1/sessions/\(session.id)").json.flatMap { info in
            ((info["legs"] as? [[String: Any]])?[1]["latched"]) as? [String: Any] } != nil }
        return (peers, session)
    }

    /// Sends datagrams of `sizes` from peer 0 through leg A, each with its own mark, and returns
    /// the sizes peer 1 received whole with the mark they were sent with, in order of sending.
    private func forward(_ peers: Peers, _ session: (id: String, legs: [Endpoint]), sizes: [Int]) throws -> [Int] {
        let marks = [TrafficClass(dscp: 46, ecn: .ect1), TrafficClass(dscp: 34, ecn: .ect0), TrafficClass(dscp: 10, ecn: .ce),
                     TrafficClass(dscp: 0, ecn: .notECT)]
        for (index, size) in sizes.enumerated() {
            var bytes = pattern(size)
            bytes[0] = UInt8(index)
            peers.send(from: 0, to: session.legs[0], bytes, trafficClass: marks[index % marks.count])
        }
        let arrivals = peers.collect(expected: sizes.count, seconds: 10).filter { $0.peer == 1 }.sorted { $0.bytes[0] < $1.bytes[0] }
        return arrivals.compactMap { arrival in
            let index = Int(arrival.bytes[0])
            var expected = pattern(sizes[index])
            expected[0] = UInt8(index)
            return arrival.bytes == expected && arrival.trafficClass == marks[index % marks.count] ? arrival.bytes.count : nil
        }
    }

    private func pattern(_ size: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) } }
}
