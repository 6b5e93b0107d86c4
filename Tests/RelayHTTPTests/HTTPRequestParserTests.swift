import XCTest

@testable import RelayHTTP

final class HTTPRequestParserTests: XCTestCase {
    private let parser = HTTPRequestParser(limits: HTTPLimits())

    private func parse(_ text: String) -> RequestParseResult {
        parser.parse(Array(text.utf8)[...])
    }

    func testCompleteRequestReportsBytesConsumed() {
        let text = "POST /v1/sessions?x=1 HTTP/1.1\r\nHost: a\r\ncontent-length: 2\r\n\r\n{}GET"
        guard case .complete(let request, let consumed) = parse(text) else {
            return XCTFail("\(parse(text))")
        }
        XCTAssertEqual(consumed, text.utf8.count - 3)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/v1/sessions")
        XCTAssertEqual(request.query, "x=1")
        XCTAssertEqual(request.headers["Content-Length"], "2")
        XCTAssertEqual(request.headers["HOST"], "a")
        XCTAssertEqual(request.body, Array("{}".utf8))
        XCTAssertTrue(request.wantsKeepAlive)
    }

    func testIncompleteUntilHeadAndBodyArrive() {
        XCTAssertEqual(parse("GET / HTTP/1.1\r\nHost: a\r\n"), .incomplete)
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc"), .incomplete)
        XCTAssertEqual(parse(""), .incomplete)
    }

    func testLeadingEmptyLinesAreSkipped() {
        guard case .complete(let request, let consumed) = parse("\r\n\r\nGET /a HTTP/1.1\r\n\r\n") else {
            return XCTFail()
        }
        XCTAssertEqual(request.path, "/a")
        XCTAssertEqual(consumed, "\r\n\r\nGET /a HTTP/1.1\r\n\r\n".utf8.count)
    }

    func testEndlessEmptyLinesHitTheHeadLimit() {
        XCTAssertEqual(
            parse(String(repeating: "\r\n", count: 5000)),
            .invalid(status: 431, reason: "request line and headers exceed 8192 bytes"))
    }

    func testConnectionTokens() {
        guard case .complete(let request, _) = parse("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n") else {
            return XCTFail()
        }
        XCTAssertFalse(request.wantsKeepAlive)
    }

    func testHeaderValueWhitespaceIsTrimmedAndControlCharactersRefused() {
        guard case .complete(let request, _) = parse("GET / HTTP/1.1\r\nX-A: \t v a \t\r\n\r\n") else {
            return XCTFail()
        }
        XCTAssertEqual(request.headers["x-a"], "v a")
        guard case .invalid(400, _) = parse("GET / HTTP/1.1\r\nX-A: a\u{1}b\r\n\r\n") else { return XCTFail() }
    }

    func testBodyLimitIsCheckedBeforeTheBodyArrives() {
        XCTAssertEqual(
            parse("POST / HTTP/1.1\r\nContent-Length: 65537\r\n\r\n"),
            .invalid(status: 413, reason: "body of 65537 bytes exceeds 65536 bytes"))
        guard case .incomplete = parse("POST / HTTP/1.1\r\nContent-Length: 65536\r\n\r\n") else { return XCTFail() }
    }
}
