@testable import ClientSockets
import Glibc
@testable import RelayObservation
import XCTest
@testable import LoadGen

final class HTTPClientTests: XCTestCase {
    func testSessionLifecycleWithToken() throws {
        let server = try TestHTTPServer(responses: [
            TestHTTPServer.answer("201 Created", #"{"id":"s-1f","legs":[{"address":"127.0.0.1","port":40000},{"address":"127.0.0.1","port":40001}],"x":1}"#),
            TestHTTPServer.answer("200 OK", #"{"engine":"uring","packets_in":10,"packets_out":9,"cpu_user_seconds":0.5,"cpu_system_seconds":0.25,"syscalls":4,"per_worker":[]}"#),
            "HTTP/1.1 204 No Content\r\n\r\n",
        ])
        let control = RelayControl(client: try HTTPClient(url: server.url + "/"), token: "sekret")
        let session = try control.createSession(legs: 2)
        XCTAssertEqual(session.id, "s-1f")
        XCTAssertEqual(session.legs.map(\.description), ["127.0.0.1:40000", "127.0.0.1:40001"])
        let stats = try control.stats()
        XCTAssertEqual(stats, RelayStats(engine: "uring", packetsIn: 10, packetsOut: 9, cpuUserSeconds: 0.5, cpuSystemSeconds: 0.25, syscalls: 4))
        try control.deleteSession("s-1f")
        let requests = server.received
        XCTAssertEqual(requests.count, 3)
        XCTAssertTrue(requests[0].hasPrefix("POST /v1/sessions HTTP/1.1\r\n"))
        XCTAssertTrue(requests[0].contains("Authorization: Bearer sekret\r\n"))
        XCTAssertTrue(requests[0].hasSuffix("\r\n\r\n{\"legs\":2}"))
        XCTAssertTrue(requests[1].hasPrefix("GET /v1/stats HTTP/1.1\r\n"))
        XCTAssertTrue(requests[2].hasPrefix("DELETE /v1/sessions/s-1f HTTP/1.1\r\n"))
    }

    func testRefusedTokenSaysSo() throws {
        let server = try TestHTTPServer(responses: [TestHTTPServer.answer("401 Unauthorized", #"{"error":"token"}"#)])
        let control = RelayControl(client: try HTTPClient(url: server.url), token: "wrong")
        XCTAssertThrowsError(try control.createSession()) { error in
            XCTAssertTrue("\(error)".contains("refused the control token (401)"), "\(error)")
        }
    }

    func testChunkedAndCloseDelimitedBodies() throws {
        let server = try TestHTTPServer(responses: [
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
            "HTTP/1.1 503 Service Unavailable\r\n\r\ndraining",
        ])
        let client = try HTTPClient(url: server.url)
        let chunked = try client.request("GET", "/a")
        XCTAssertEqual(chunked.status, 200)
        XCTAssertEqual(chunked.text, "abcde")
        let closed = try client.request("GET", "/healthz")
        XCTAssertEqual(closed.status, 503)
        XCTAssertEqual(closed.text, "draining")
    }

    func testSilentServerTimesOutAndOversizeIsRefused() throws {
        let server = try TestHTTPServer(responses: [nil, TestHTTPServer.answer("200 OK", String(repeating: "x", count: 5000))])
        let client = HTTPClient(server: try SocketAddress(hostPort: "127.0.0.1:\(server.port)"), timeoutMs: 300, maxResponseBytes: 1000)
        XCTAssertThrowsError(try client.request("GET", "/slow")) { XCTAssertTrue("\($0)".contains("no answer within 300 ms"), "\($0)") }
        XCTAssertThrowsError(try client.request("GET", "/big")) { XCTAssertTrue("\($0)".contains("longer than 1000 bytes"), "\($0)") }
    }

    func testUnreachableAndBadURL() throws {
        // A TCP port that is bound but not listening refuses connections, for certain.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = try SocketAddress(host: "127.0.0.1", port: 0)
        XCTAssertEqual(address.withSockaddr { bind(fd, $0, $1) }, 0)
        address.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address.storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &address.length) } }
        let client = try HTTPClient(url: "http://127.0.0.1:\(address.port)")
        XCTAssertThrowsError(try client.request("GET", "/healthz")) {
            XCTAssertTrue("\($0)".contains("connect: connection refused (ECONNREFUSED)"), "\($0)")
        }
        XCTAssertThrowsError(try HTTPClient(url: "https://127.0.0.1:1"))
        XCTAssertThrowsError(try HTTPClient(url: "http://127.0.0.1:1/v1"))
    }

    func testStatsNamesAMissingField() {
        XCTAssertThrowsError(try RelayStats(json: Array(#"{"engine":"mmsg","packets_in":1}"#.utf8))) {
            XCTAssertTrue("\($0)".contains("packets_out"), "\($0)")
        }
    }
}
