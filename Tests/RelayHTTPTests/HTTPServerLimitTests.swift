import Foundation
import RelayHTTP
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// What the server does with clients that break the protocol or its limits: answer with a
/// reason when it can, close, and keep serving everyone else.
final class HTTPServerLimitTests: XCTestCase {
    /// Sends `request`, expects one error response with `status` and a JSON reason, then close.
    private func assertRefused(
        _ request: String, status: Int, reasonContains: String, limits: HTTPLimits = HTTPLimits(),
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let server = try startServer(limits: limits)
        let client = try RawClient(port: server.boundPort)
        try client.send(request)
        let response = try XCTUnwrap(client.readResponse(), file: file, line: line)
        XCTAssertEqual(response.status, status, response.text, file: file, line: line)
        XCTAssertEqual(response.headers["connection"], "close", file: file, line: line)
        XCTAssertTrue(response.text.hasPrefix("{\"error\":"), response.text, file: file, line: line)
        XCTAssertTrue(response.text.contains(reasonContains), response.text, file: file, line: line)
        XCTAssertEqual(try client.readUntilClosed(), [], file: file, line: line)
        try assertStillServes(server, file: file, line: line)
    }

    func testBadRequestLine() throws {
        try assertRefused("GET /hello\r\n\r\n", status: 400, reasonContains: "request line")
        try assertRefused("GET  /hello HTTP/1.1\r\n\r\n", status: 400, reasonContains: "request line")
        try assertRefused("GET hello HTTP/1.1\r\n\r\n", status: 400, reasonContains: "target")
        try assertRefused("GET /hello HTTQ/1.1\r\n\r\n", status: 400, reasonContains: "HTTP/1.1")
        try assertRefused("G(T /hello HTTP/1.1\r\n\r\n", status: 400, reasonContains: "method")
    }

    /// The first of two credentials used to decide; a proxy in front may have checked the other.
    func testRepeatedAuthorizationOrHostGets400() throws {
        try assertRefused(
            "GET /hello HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n", status: 400,
            reasonContains: "more than one Authorization header")
        try assertRefused(
            "GET /hello HTTP/1.1\r\nauthorization: Bearer a\r\nHost: t\r\nAUTHORIZATION: Bearer a\r\n\r\n", status: 400,
            reasonContains: "more than one Authorization header")
        try assertRefused("GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400, reasonContains: "more than one Host header")
    }

    func testUnsupportedVersionGets505() throws {
        try assertRefused("GET /hello HTTP/2.0\r\n\r\n", status: 505, reasonContains: "HTTP/1.1")
    }

    func testMalformedHeadersGet400() throws {
        try assertRefused("GET /hello HTTP/1.1\r\nHost test\r\n\r\n", status: 400, reasonContains: "colon")
        try assertRefused("GET /hello HTTP/1.1\r\nHost : test\r\n\r\n", status: 400, reasonContains: "header name")
        try assertRefused("GET /hello HTTP/1.1\r\nA: b\r\n c\r\n\r\n", status: 400, reasonContains: "folding")
        try assertRefused("GET /hello HTTP/1.1\nHost: test\r\n\r\n", status: 400, reasonContains: "bare CR or LF")
    }

    func testHeaderBlockOver8KiBGets431() throws {
        let big = String(repeating: "a", count: 9 * 1024)
        try assertRefused("GET /hello HTTP/1.1\r\nX-Big: \(big)\r\n\r\n", status: 431, reasonContains: "8192 bytes")
    }

    func testHeadThatNeverEndsGets431() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("GET /hello HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 20 * 1024))
        XCTAssertEqual(try client.readResponse()?.status, 431)
        try assertStillServes(server)
    }

    func testHeaderBlockJustUnderTheLimitIsServed() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        let head = "GET /hello HTTP/1.1\r\nHost: test\r\nX-Pad: \r\n\r\n"
        let pad = String(repeating: "p", count: 8 * 1024 - head.utf8.count)
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\nX-Pad: \(pad)\r\n\r\n")
        XCTAssertEqual(try client.readResponse()?.status, 200)
    }

    func testBodyOver64KiBGets413() throws {
        let body = String(repeating: "b", count: 70_000)
        try assertRefused(
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 70000\r\n\r\n\(body)", status: 413,
            reasonContains: "65536 bytes")
    }

    func testInvalidContentLengthGets400() throws {
        for value in ["abc", "-1", "+5", "5 5", "", "99999999999999999999"] {
            try assertRefused(
                "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(value)\r\n\r\n", status: 400,
                reasonContains: "Content-Length")
        }
    }

    func testConflictingContentLengthsGet400() throws {
        try assertRefused(
            "POST /echo HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", status: 400,
            reasonContains: "conflicting Content-Length")
    }

    func testContentLengthLongerThanTheBodySentThenCloseGetsNoResponse() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        client.shutdownWrite()
        XCTAssertEqual(try client.readUntilClosed(), [])
        try assertStillServes(server)
    }

    func testContentLengthShorterThanTheBodyLeavesTheRestAsTheNextRequest() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcdef\r\n\r\n")
        XCTAssertEqual(try client.readResponse()?.text, "abc")
        let rest = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(rest.status, 400)
        XCTAssertTrue(rest.text.contains("request line"), rest.text)
        XCTAssertEqual(try client.readUntilClosed(), [])
    }

    func testManySmallPipelinedRequestsAreAllAnswered() throws {
        let server = try startServer()
        let client = try RawClient(port: server.boundPort)
        let count = 2000
        try client.send(String(repeating: "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n", count: count))
        for index in 0..<count {
            XCTAssertEqual(try client.readResponse()?.text, "hello", "response \(index)")
        }
    }

    func testChunkedIsRefused() throws {
        try assertRefused(
            "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", status: 501,
            reasonContains: "Transfer-Encoding is not supported")
        try assertRefused(
            "POST /echo HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc", status: 400,
            reasonContains: "both Transfer-Encoding and Content-Length")
    }

    func testSlowlorisIsClosedAfterTheReadTimeout() throws {
        let server = try startServer(limits: HTTPLimits(readTimeout: 0.3))
        let client = try RawClient(port: server.boundPort)
        try client.send("GET /hello HTTP/1.1\r\n")
        // One byte at a time: if the deadline restarted with every byte this would go on for
        // the whole loop and the test would fail below.
        var closedByServer = false
        for _ in 0..<200 where !closedByServer {
            usleep(25_000)
            closedByServer = client.isReadable()
            if !closedByServer { try? client.send("X") }
        }
        XCTAssertTrue(closedByServer, "the server kept a trickling connection open")
        let rest = String(decoding: try client.readUntilClosed(), as: UTF8.self)
        XCTAssertTrue(rest.isEmpty || rest.hasPrefix("HTTP/1.1 408 "), rest)
        try assertStillServes(server)
    }

    func testSilentConnectionIsClosedAfterTheReadTimeout() throws {
        let server = try startServer(limits: HTTPLimits(readTimeout: 0.3))
        let client = try RawClient(port: server.boundPort)
        let rest = String(decoding: try client.readUntilClosed(), as: UTF8.self)
        XCTAssertTrue(rest.isEmpty || rest.hasPrefix("HTTP/1.1 408 "), rest)
    }

    func testIdleKeepAliveConnectionIsClosed() throws {
        let server = try startServer(limits: HTTPLimits(idleTimeout: 0.3))
        let client = try RawClient(port: server.boundPort)
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        XCTAssertEqual(try client.readResponse()?.status, 200)
        XCTAssertEqual(try client.readUntilClosed(), [])
    }

    /// The count other tests wait on (SlowlorisTests) follows connections as they come and go.
    func testServedConnectionsCountsTheAdmittedOnes() throws {
        let server = try startServer(limits: HTTPLimits(maxConnections: 4))
        XCTAssertEqual(server.servedConnections, 0)
        var clients = try (0..<3).map { _ in try RawClient(port: server.boundPort) }
        XCTAssertTrue(waitFor { server.servedConnections == 3 }, "\(server.servedConnections) served, not 3")
        clients.removeLast()  // closes it
        XCTAssertTrue(waitFor { server.servedConnections == 2 }, "\(server.servedConnections) served, not 2")
        withExtendedLifetime(clients) {}
    }

    private func waitFor(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while !condition() && Date() < deadline { usleep(10_000) }
        return condition()
    }

    /// 503 only when no slot can be freed: every admitted connection is busy with a response
    /// its client does not read (neither waiting on a request nor idle).
    func testConnectionsBeyondTheCapGet503WhenNoSlotCanBeFreed() throws {
        let server = try startServer(limits: HTTPLimits(maxConnections: 4))
        let admitted = try (0..<4).map { _ in try RawClient(port: server.boundPort) }
        // 16 MiB each, more than the kernel's buffers hold while the client does not read.
        for client in admitted { try client.send(String(repeating: "GET /big HTTP/1.1\r\nHost: t\r\n\r\n", count: 8)) }
        var refused: RawClient.Response?
        for _ in 0..<100 where refused?.status != 503 {
            // Until the server has read all four requests, a newcomer may still evict one.
            refused = try RawClient(port: server.boundPort).readResponse()
            if refused?.status != 503 { usleep(20_000) }
        }
        XCTAssertEqual(refused?.status, 503)
        XCTAssertTrue(refused?.text.contains("too many connections") == true, refused?.text ?? "")
    }

    /// Connections that have not sent a whole request give way at the cap, the longest waiting
    /// first, so clients that connect and trickle (or send nothing) cannot lock others out.
    func testWaitingConnectionsGiveWayToNewcomersAtTheCap() throws {
        let server = try startServer(limits: HTTPLimits(maxConnections: 4))
        let waiting = try (0..<4).map { _ in try RawClient(port: server.boundPort) }
        for client in waiting { try client.send("GET /hel") }
        for _ in 0..<2 {
            let newcomer = try RawClient(port: server.boundPort)
            try newcomer.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
            XCTAssertEqual(try newcomer.readResponse()?.status, 200, "served, not refused")
        }
        XCTAssertEqual(try waiting[0].readUntilClosed(), [], "the longest waiting was closed")
        // The newest waiting connection kept its slot and can finish its request.
        try waiting[3].send("lo HTTP/1.1\r\nHost: test\r\n\r\n")
        XCTAssertEqual(try waiting[3].readResponse()?.status, 200)
    }

    /// Idle keep-alive connections give way at the cap: holding every slot by sending one
    /// request per connection now and then must not lock newcomers out.
    func testIdleKeepAliveConnectionsGiveWayToNewcomersAtTheCap() throws {
        let server = try startServer(limits: HTTPLimits(maxConnections: 2))
        let holders = try (0..<2).map { _ in try RawClient(port: server.boundPort) }
        for holder in holders {
            try holder.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
            XCTAssertEqual(try holder.readResponse()?.status, 200)
        }
        let newcomer = try RawClient(port: server.boundPort)
        try newcomer.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        XCTAssertEqual(try newcomer.readResponse()?.status, 200, "served, not refused")
        XCTAssertEqual(try holders[0].readUntilClosed(), [], "the longest-idle holder was closed")
    }

    func testGarbageBytesDoNotHurtTheServer() throws {
        let server = try startServer()
        var generator = SplitMix64(seed: 0x6d65_6469_6172_656c)
        let payloads: [[UInt8]] = [
            (0..<4096).map { _ in UInt8(truncatingIfNeeded: generator.next()) },
            (0..<4096).map { _ in [13, 10, 32, 58, 0, 65, 255][Int(generator.next() % 7)] },
            Array(repeating: 0, count: 3000),
            Array("\r\n\r\n\r\n".utf8) + Array(repeating: UInt8(ascii: "A"), count: 10_000),
            Array("POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\n\u{0}\u{1}\u{2}\u{3}\u{4}GARBAGE\r\n\r\n".utf8),
            Array("GET /\u{7F}\u{80} HTTP/1.1\r\n\r\n".utf8) + [0xFF, 0xFE],
        ]
        for payload in payloads {
            let client = try RawClient(port: server.boundPort)
            try? client.send(payload)
            client.shutdownWrite()
            _ = try client.readUntilClosed()
        }
        try assertStillServes(server)
    }

    func testHalfWrittenRequestThenCloseDoesNotHurtTheServer() throws {
        let server = try startServer()
        do {
            let client = try RawClient(port: server.boundPort)
            try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Le")
        }  // closed here, mid-header
        do {
            let client = try RawClient(port: server.boundPort)
            try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\nhalf")
        }  // closed here, mid-body
        try assertStillServes(server)
    }

    func testClientThatNeverReadsDoesNotBlockOthers() throws {
        let server = try startServer(limits: HTTPLimits(writeTimeout: 0.5))
        let hog = try RawClient(port: server.boundPort)
        // Ask for many large responses and never read them.
        try hog.send(String(repeating: "GET /big HTTP/1.1\r\nHost: t\r\n\r\n", count: 8))
        try assertStillServes(server)
        // The server gives up on it once writing stalls, with a reset: the client is not
        // reading, so nothing orderly could reach it.
        var closed = false
        for _ in 0..<200 where !closed {
            usleep(50_000)
            closed = hog.isHungUp()
        }
        XCTAssertTrue(closed)
    }
}

/// A small deterministic generator so garbage tests are reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
