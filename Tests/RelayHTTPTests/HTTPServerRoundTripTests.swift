import Foundation
import RelayHTTP
import TestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

final class HTTPServerRoundTripTests: XCTestCase {
    func testGetRoundTrip() throws {
        let server = try startServer()
        XCTAssertNotEqual(server.boundPort, 0)
        let client = try RawClient(port: server.boundPort)
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        let response = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, "hello")
        XCTAssertEqual(response.headers["content-length"], "5")
        XCTAssertEqual(response.headers["content-type"], "text/plain; charset=utf-8")
        XCTAssertNil(response.headers["connection"])
    }

    func testPostEchoesBody() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        let body = #"{"legs": 3}"#
        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let response = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, body)
    }

    func testBodyArrivingInPiecesIsAssembled() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Len")
        usleep(20_000)
        try client.send("gth: 10\r\n\r\n01234")
        usleep(20_000)
        try client.send("56789")
        let response = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(response.text, "0123456789")
    }

    func testKeepAliveServesTwoRequestsOnOneConnection() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        for path in ["/where?n=1", "/where?n=2"] {
            try client.send("GET \(path) HTTP/1.1\r\nHost: test\r\n\r\n")
            let response = try XCTUnwrap(client.readResponse(), "no response to \(path)")
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.text, "path=/where query=\(path.dropFirst(7))")
        }
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send(
            "GET /where?n=1 HTTP/1.1\r\nHost: t\r\n\r\n"
                + "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"
                + "GET /where?n=3 HTTP/1.1\r\nHost: t\r\n\r\n")
        XCTAssertEqual(try client.readResponse()?.text, "path=/where query=n=1")
        XCTAssertEqual(try client.readResponse()?.text, "abc")
        XCTAssertEqual(try client.readResponse()?.text, "path=/where query=n=3")
    }

    func testConnectionCloseIsHonoured() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        let response = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["connection"], "close")
        XCTAssertEqual(try client.readUntilClosed(), [])
    }

    func testHTTP10ConnectionIsClosedAfterTheResponse() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("GET /hello HTTP/1.0\r\n\r\n")
        let response = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(response.text, "hello")
        XCTAssertEqual(response.headers["connection"], "close")
        XCTAssertEqual(try client.readUntilClosed(), [])
    }

    func testQueryIsSplitFromPath() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("GET /where?a=1&b=%20x HTTP/1.1\r\nHost: test\r\n\r\n")
        XCTAssertEqual(try client.readResponse()?.text, "path=/where query=a=1&b=%20x")
    }

    func testLargeResponseIsWrittenCompletely() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("GET /big HTTP/1.1\r\nHost: test\r\n\r\n")
        let response = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(response.body.count, ServerFixture.bigBody.count)
        XCTAssertTrue(response.body == ServerFixture.bigBody)
        // The connection is still usable after a response that needed many writes.
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        XCTAssertEqual(try client.readResponse()?.text, "hello")
    }

    func testNoContentHasNoBodyAndKeepsFraming() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("DELETE /v1/sessions/s-1 HTTP/1.1\r\nHost: test\r\n\r\nGET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        let deleted = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(deleted.status, 204)
        XCTAssertNil(deleted.headers["content-length"])
        XCTAssertEqual(try client.readResponse()?.text, "hello")
    }

    func testMethodNotAllowedCarriesAllowOverTheWire() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("PUT /v1/sessions/s-1 HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n")
        let response = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(response.status, 405)
        XCTAssertEqual(response.headers["allow"], "GET, DELETE")
        XCTAssertEqual(response.headers["content-type"], "application/json")
    }

    func testIPv6Loopback() throws {
        try IPv6Loopback.require()
        let server = try startServer(host: "::1")
        let client = try RawClient(host: "::1", port: server.boundPort)
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        XCTAssertEqual(try client.readResponse()?.text, "hello")
    }

    func testDualStackWildcardAcceptsIPv4() throws {
        try IPv6Loopback.require()
        let server = try startServer(host: "::")
        let client = try RawClient(host: "127.0.0.1", port: server.boundPort)
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        XCTAssertEqual(try client.readResponse()?.text, "hello")
    }

    func testBracketedIPv6HostIsAccepted() throws {
        try IPv6Loopback.require()
        let server = try HTTPServer(host: "[::1]", port: 0) { _ in .noContent }
        XCTAssertNotEqual(server.boundPort, 0)
    }

    func testBindErrorNamesAddressReasonAndRemedy() throws {
        let server = try startServer()
        XCTAssertThrowsError(try HTTPServer(host: "127.0.0.1", port: server.boundPort) { _ in .noContent }) { error in
            let text = String(describing: error)
            XCTAssertTrue(text.contains("cannot listen on 127.0.0.1:\(server.boundPort)"), text)
            XCTAssertTrue(text.contains("address already in use (EADDRINUSE)"), text)
            XCTAssertTrue(text.contains("choose another --http port"), text)
            XCTAssertEqual((error as? HTTPServerError)?.errno, EADDRINUSE)
        }
    }

    func testHostThatIsNotALiteralIsRefused() {
        XCTAssertThrowsError(try HTTPServer(host: "localhost", port: 0) { _ in .noContent }) { error in
            XCTAssertTrue(String(describing: error).contains("not an IPv4 or IPv6 address literal"), "\(error)")
        }
    }

    func testStopClosesConnectionsAndListener() throws {
        let server = try HTTPServer(host: "127.0.0.1", port: 0) { _ in .text(200, "x") }
        server.start()
        let port = server.boundPort
        let client = try RawClient(port: port)
        try client.send("GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        XCTAssertEqual(try client.readResponse()?.status, 200)
        server.stop()
        XCTAssertEqual(try client.readUntilClosed(), [])
        XCTAssertThrowsError(try RawClient(port: port))
        server.stop()  // a second stop is harmless
    }
}
