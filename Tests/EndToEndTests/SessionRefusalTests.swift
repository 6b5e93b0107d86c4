import Foundation
import Glibc
import TestPorts
import XCTest

/// A matchmaker asking a full or draining relay for a session is told to go elsewhere: 503
/// with Retry-After and a reason, and /readyz says the same before it asks.
final class SessionRefusalTests: XCTestCase {
    /// POST /v1/sessions: the status, the Retry-After header and the JSON reason.
    private func post(_ relay: RelayProcess) throws -> (status: Int, retryAfter: String?, reason: String?) {
        let head = "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        let text = String(decoding: try HTTPReply.exchange(port: relay.httpPort, bytes: Array(head.utf8)), as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let lines = parts[0].components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        let retryAfter = lines.first { $0.lowercased().hasPrefix("retry-after:") }.map { $0.dropFirst(12).trimmingCharacters(in: .whitespaces) }
        let body = (try? JSONSerialization.jsonObject(with: Data(parts.dropFirst().joined().utf8))) as? [String: Any]
        return (status, retryAfter, body?["reason"] as? String)
    }

    func testAFullThenDrainingRelaySaysWhyAndWhenToRetry() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 10), ["--max-sessions", "1", "--drain-seconds", "3"])
        XCTAssertEqual(try relay.request("GET", "/readyz").status, 200)
        XCTAssertEqual(try post(relay).status, 201)
        let full = try relay.waitFor("/readyz") { $0["reason"] as? String == "capacity" }
        XCTAssertEqual(full["full"] as? [String], ["sessions"], "\(full)")
        let refused = try post(relay)
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.retryAfter, "5")
        XCTAssertEqual(refused.reason, "sessions")

        kill(relay.process.processIdentifier, SIGTERM)
        XCTAssertTrue(eventually { (try? relay.request("GET", "/readyz").json?["reason"] as? String) == "draining" })
        let draining = try post(relay)
        XCTAssertEqual(draining.status, 503)
        XCTAssertEqual(draining.retryAfter, "5")
        XCTAssertEqual(draining.reason, "draining")
        XCTAssertEqual(relay.stop(), 0)
    }
}
