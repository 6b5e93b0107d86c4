import Foundation
import TestPorts
import Glibc
import XCTest

/// Bad requests get a 4xx with a reason; the token is enforced; bad options stop start-up.
final class ControlAPITests: XCTestCase {
    func testBadRequestsGetClearErrors() throws {
        let relay = try RelayProcess(ports: PortBlock(), [])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let cases: [(String, String)] = [
            ("{", "JSON"),
            ("[1]", "object"),
            (#"{"legs": 2, "colour": "red"}"#, "colour"),
            (#"{"legs": "two"}"#, "legs"),
            (#"{"legs": 1}"#, "legs"),
            (#"{"legs": 2.5}"#, "legs"),
            (#"{"dscp": "purple"}"#, "dscp"),
            (#"{"service_class": "gold"}"#, "service_class"),
            (#"{"allowed_sources": ["nonsense"]}"#, "allowed_sources"),
            (#"{"max_packets_per_second": -1}"#, "max_packets_per_second"),
            (#"{"max_bytes_per_second": 1000000001}"#, "max_bytes_per_second"),
            (#"{"ecn_marking": "yes"}"#, "ecn_marking"),
            (#"{"ecn_marking": true}"#, "ecn_marking"),
        ]
        for (body, mention) in cases {
            let reply = try relay.request("POST", "/v1/sessions", body: body)
            XCTAssertEqual(reply.status, 400, body)
            let reason = reply.json?["error"] as? String ?? ""
            XCTAssertTrue(reason.localizedCaseInsensitiveContains(mention), "\(body): \(reason)")
        }
        XCTAssertEqual(try relay.request("GET", "/v1/nothing").status, 404)
        XCTAssertEqual(try relay.request("PUT", "/v1/sessions").status, 405)
        XCTAssertEqual(try relay.request("GET", "/v1/sessions/s-0000000000000000").status, 404)
        XCTAssertEqual(try relay.request("GET", "/v1/sessions").status, 200)
    }

    func testTokenIsRequiredWhenConfigured() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 50), [], environment: ["MEDIARELAY_CONTROL_TOKEN": "sesame"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        XCTAssertEqual(try relay.request("POST", "/v1/sessions", body: "{}").status, 401)
        XCTAssertEqual(try relay.request("POST", "/v1/sessions", body: "{}", token: "wrong").status, 401)
        XCTAssertEqual(try relay.request("GET", "/v1/sessions").status, 401)
        XCTAssertEqual(try relay.request("POST", "/v1/sessions", body: "{}", token: "sesame").status, 201)
        XCTAssertEqual(try relay.request("GET", "/v1/stats").status, 200, "stats need no token")
    }

    func testSessionCapAnswers503() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 50), ["--max-sessions", "2"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        _ = try relay.createSession()
        _ = try relay.createSession()
        let third = try relay.request("POST", "/v1/sessions", body: "{}")
        XCTAssertEqual(third.status, 503)
        XCTAssertTrue((third.json?["error"] as? String ?? "").contains("maximum"))
    }

    func testExpiredSessionsFreeTheirPlaceUnderTheCap() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 10), ["--max-sessions", "1"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        _ = try relay.createSession(#"{"idle_timeout_seconds": 1}"#)
        XCTAssertEqual(try relay.request("POST", "/v1/sessions", body: "{}").status, 503)
        // Idle 1 s, housekeeping twice a second: ask until there is room (a refused POST
        // creates nothing), with a deadline that only bounds a failing test.
        let deadline = Date().addingTimeInterval(20)
        var status = 503
        while status == 503 && Date() < deadline {
            usleep(50_000)
            status = try relay.request("POST", "/v1/sessions", body: "{}").status
        }
        XCTAssertEqual(status, 201)
        let stats = try relay.waitFor { ($0["sessions_created"] as? Int ?? 0) >= 2 }
        XCTAssertEqual(stats["sessions"] as? Int, 1)
        XCTAssertEqual(stats["sessions_expired"] as? Int, 1)
        XCTAssertEqual(stats["sessions_created"] as? Int, 2)
    }

    func testPortRangeExhaustionAnswers503() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 3), [])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let first = try relay.createSession()
        let refused = try relay.request("POST", "/v1/sessions", body: "{}")
        XCTAssertEqual(refused.status, 503)
        XCTAssertTrue((refused.json?["error"] as? String ?? "").contains("port"), refused.text)
        // The refused session's one port went back: after a delete, three legs fit in three ports.
        XCTAssertEqual(try relay.request("DELETE", "/v1/sessions/\(first.id)").status, 204)
        XCTAssertEqual(try relay.createSession(#"{"legs": 3}"#).legs.count, 3, "no port leaked")
    }

    func testBadOptionsStopStartUpWithOneLine() throws {
        for arguments in [["--engine", "warp"], ["--ports", "5-2"], ["--http", "0.0.0.0:9480"], ["--bogus"],
                          ["--egress-rate", "1000"], ["--ecn-marking", "yes"],
                          ["--ecn-l4s-threshold", "60", "--ecn-classic-threshold", "40"], ["--ecn-backlog", "yes"],
                          ["--ecn-backlog-l4s-threshold", "50"],
                          ["--ecn-backlog-l4s-threshold", "9000", "--ecn-backlog-classic-threshold", "3000"]] {
            let process = Process()
            process.executableURL = RelayProcess.productsDirectory.appendingPathComponent("mediarelay")
            process.arguments = arguments
            var environment = ProcessInfo.processInfo.environment
            environment["MEDIARELAY_CONTROL_TOKEN"] = nil
            process.environment = environment
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 2, "\(arguments)")
            XCTAssertEqual(text.split(separator: "\n").count, 1, "\(arguments): \(text)")
            XCTAssertTrue(text.contains(arguments[0]), "\(arguments): \(text)")
        }
    }
}
