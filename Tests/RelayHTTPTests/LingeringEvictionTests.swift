import RelayHTTP
import XCTest

/// A client that makes one request per connection (`Connection: close`) and is slow to close
/// its end leaves the server lingering on each connection for up to 2 s, so the response is
/// not cut by a reset. `make demo` creates 1,000 sessions that way: the lingering connections
/// held the cap and every POST after the 64th got 503. At the cap, a lingering connection is
/// the first to give way to a newcomer.
final class LingeringEvictionTests: XCTestCase {
    func testConnectionsLingeringAfterTheirLastResponseGiveWayToNewcomers() throws {
        var limits = HTTPLimits()
        limits.maxConnections = 4
        let server = try startServer(limits: limits)
        var answered: [RawClient] = []
        for _ in 0..<8 {
            let client = try RawClient(port: server.boundPort)
            try client.send(get("/hello", server, extraHeaders: "Connection: close\r\n"))
            let response = try XCTUnwrap(client.readResponse())
            XCTAssertEqual(response.status, 200, "request \(answered.count + 1) of 8 at a cap of 4: \(response.text)")
            answered.append(client)  // kept open: the server lingers for its end of file
        }
    }
}
