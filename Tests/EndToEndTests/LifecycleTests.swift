import DatagramEngine
import Foundation
import Glibc
import NetAddress
import TestPorts
import XCTest

/// Graceful shutdown, and forwarding that survives bad HTTP and stray datagrams.
final class LifecycleTests: XCTestCase {
    func testSigtermDrainsThenExitsZero() throws {
        // Long enough that the checks below, however slow this machine, run inside the drain.
        let relay = try RelayProcess(ports: PortBlock(count: 100), ["--drain-seconds", "4"])
        let session = try relay.createSession()
        let peers = try Peers(count: 2)
        peers.send(from: 1, to: session.legs[1], [0])
        peers.send(from: 0, to: session.legs[0], [1])
        XCTAssertEqual(peers.collect(expected: 1).count, 1)
        kill(relay.process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(3)
        var health = 200
        while health != 503 && Date() < deadline {
            health = try relay.request("GET", "/healthz").status
            if health != 503 { usleep(10_000) }
        }
        XCTAssertEqual(health, 503, "healthz says draining")
        XCTAssertTrue(relay.process.isRunning, "draining, not gone")
        XCTAssertEqual(try relay.request("POST", "/v1/sessions", body: "{}").status, 503)
        peers.send(from: 0, to: session.legs[0], [2])
        XCTAssertEqual(peers.collect(expected: 1).map(\.bytes), [[2]], "still forwarding while draining")
        XCTAssertEqual(relay.stop(), 0)
        XCTAssertTrue(relay.log.contains("draining for 4 s"), relay.log)
        XCTAssertTrue(relay.log.contains("stopped"), relay.log)
    }

    func testMalformedHTTPAndStrayDatagramsLeaveForwardingIntact() throws {
        let upstream = try Peers(count: 1)
        let listen = try FreePort.udp()
        let relay = try RelayProcess(ports: PortBlock(count: 100), ["--forward", "127.0.0.1:\(listen)=\(upstream.address(0))"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let session = try relay.createSession()
        let peers = try Peers(count: 3)
        peers.send(from: 1, to: session.legs[1], [0])
        peers.send(from: 0, to: session.legs[0], [0])
        _ = peers.collect(expected: 1)

        for garbage in ["\u{0}\u{1}\u{2}\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", String(repeating: "A", count: 20_000),
                        "POST /v1/sessions HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n"] {
            _ = try? HTTPReply.exchange(port: relay.httpPort, bytes: Array(garbage.utf8))
        }
        // Strays: a stranger on a latched leg, datagrams to ports of the range nobody holds,
        // junk of every size to the forward rule's listener from many sources.
        let stranger = try Peers(count: 8)
        for round in 0..<200 {
            stranger.send(from: round % 8, to: session.legs[0], [UInt8](repeating: 0xEE, count: round % 1500))
            stranger.send(from: round % 8, to: Endpoint(host: "127.0.0.1", port: relay.ports!.range.upperBound)!, [1])
        }
        // Once all 200 are counted as hijack drops, a forwarded stray would already be waiting.
        let stats = try relay.waitFor { RelayProcess.number($0, "drops", "hijack") ?? 0 >= 200 }
        XCTAssertEqual(RelayProcess.number(stats, "drops", "hijack"), 200)
        XCTAssertTrue(peers.pending().filter { $0.bytes.first == 0xEE }.isEmpty, "no stray was forwarded")

        peers.send(from: 0, to: session.legs[0], [42])
        XCTAssertEqual(peers.collect(expected: 1).map(\.bytes), [[42]])
        XCTAssertEqual(try relay.request("GET", "/healthz").status, 200)
    }
}
