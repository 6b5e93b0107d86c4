import Foundation
import TestPorts
import Glibc
import XCTest

/// Inputs that used to hang start-up, leak a Cocoa error domain, or be half-accepted.
final class StrictInputTests: XCTestCase {
    /// A FIFO hung start-up with no output; a directory said "NSCocoaErrorDomain error 256".
    func testAConfigThatIsNotARegularFileStopsStartUpNamingIt() throws {
        let config = try ConfigFixture(self, "{}")
        let fifo = config.directory.appendingPathComponent("fifo.json").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        for (path, kind) in [(fifo, "a FIFO"), (config.directory.path, "a directory"), ("/dev/null", "a character device")] {
            let (status, stderr) = try RelayProcess.runToExit(["--config", path, "--http", "127.0.0.1:0"])
            XCTAssertEqual(status, 2, stderr)
            XCTAssertEqual(stderr.split(separator: "\n").count, 1, stderr)
            XCTAssertTrue(stderr.contains("config \(path): is \(kind)"), stderr)
            XCTAssertFalse(stderr.contains("Cocoa"), stderr)
        }
    }

    func testADuplicateConfigKeyStopsStartUpNamingIt() throws {
        let config = try ConfigFixture(self, #"{"ports": "47500-47509", "workers": 1, "ports": "47510-47519"}"#)
        let (status, stderr) = try RelayProcess.runToExit(["--config", config.path, "--http", "127.0.0.1:0"])
        XCTAssertEqual(status, 2, stderr)
        XCTAssertTrue(stderr.contains(#"key "ports": appears more than once"#), stderr)
    }

    func testDuplicateAPIFieldsAndCredentialsAre400() throws {
        let relay = try RelayProcess(ports: PortBlock(count: 10), ["--control-token", "t0ken"])
        defer { XCTAssertEqual(relay.stop(), 0) }
        let reply = try relay.request("POST", "/v1/sessions", body: #"{"legs": 2, "legs": 3}"#, token: "t0ken")
        XCTAssertEqual(reply.status, 400)
        XCTAssertTrue(reply.text.contains(#"field \"legs\" appears more than once"#), reply.text)
        let head = "GET /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\nAuthorization: Bearer other\r\n\r\n"
        let raw = String(decoding: try HTTPReply.exchange(port: relay.httpPort, bytes: Array(head.utf8)), as: UTF8.self)
        XCTAssertTrue(raw.hasPrefix("HTTP/1.1 400 "), raw)
        XCTAssertTrue(raw.contains("more than one Authorization header"), raw)
    }
}
