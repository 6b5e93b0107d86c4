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
        XCTAssertEqual(parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabc"), .awaitingBody(total: 43))
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

    /// Found by FuzzHTTPRequest: a head that ends right at the limit was accepted when it
    /// arrived at once and refused 431 when it arrived in pieces that stopped inside its final
    /// CRLFCRLF: up to 3 bytes of the terminator may lie past the limit, so the parser waits for
    /// them before it calls the head too large.
    func testAHeadAtTheLimitIsAcceptedHoweverItArrives() {
        let limits = HTTPLimits()
        let start = "GET / HTTP/1.1\r\nX-Fill: "
        let head = start + String(repeating: "a", count: limits.maxHeaderBytes - start.utf8.count) + "\r\n\r\n"
        XCTAssertEqual(head.utf8.count, limits.maxHeaderBytes + 4)
        guard case .complete = parse(head) else { return XCTFail("the whole head: \(parse(head))") }
        for missing in 1...3 {
            let partial = Array(head.utf8.dropLast(missing))
            XCTAssertEqual(parser.parse(partial[...]), .incomplete, "\(missing) bytes of the CRLFCRLF still to come")
        }
        XCTAssertEqual(parse(head.replacingOccurrences(of: "\r\n\r\n", with: "a\r\n\r\n")),
                       .invalid(status: 431, reason: "request line and headers exceed 8192 bytes"), "one byte more is too large")
        XCTAssertEqual(parser.parse(Array((head + "a").utf8.dropLast(5) + "aaaa".utf8)[...]),
                       .invalid(status: 431, reason: "request line and headers exceed 8192 bytes"),
                       "no terminator within the limit and 4 bytes past it: too large before the rest arrives")
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
        guard case .awaitingBody = parse("POST / HTTP/1.1\r\nContent-Length: 65536\r\n\r\n") else { return XCTFail() }
    }

    /// Whatever the bytes, the parser answers without trapping and never claims more bytes
    /// than it was given. Random input, and valid requests with random bytes changed.
    func testArbitraryBytesNeverTrapOrOverconsume() {
        var generator = SplitMix64(seed: 42)
        let valid = Array("POST /v1/sessions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n{}\r\nGET / HTTP/1.1\r\n\r\n".utf8)
        let alphabet: [UInt8] = Array(" :/\r\n\t0123456789HTTP-Content-Length".utf8) + [0, 0x7F, 0x80, 0xFF]
        var outcomes = Set<String>()
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int(generator.next() % 200)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            } else {
                bytes = valid
                for _ in 0..<(1 + generator.next() % 4) {
                    bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
                }
                bytes = Array(bytes.prefix(Int(generator.next() % UInt64(bytes.count + 1))))
            }
            switch parser.parse(bytes[...]) {
            case .incomplete, .awaitingBody: outcomes.insert("incomplete")
            case .invalid(let status, _): outcomes.insert("invalid \(status)")
            case .complete(_, let consumed):
                outcomes.insert("complete")
                XCTAssertGreaterThan(consumed, 0)
                XCTAssertLessThanOrEqual(consumed, bytes.count)
            }
        }
        // The inputs reached every kind of outcome, so the loop tested something.
        XCTAssertTrue(outcomes.isSuperset(of: ["incomplete", "complete", "invalid 400"]), "\(outcomes)")
    }
}
