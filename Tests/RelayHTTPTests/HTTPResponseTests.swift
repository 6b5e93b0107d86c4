import Foundation
import XCTest

@testable import RelayHTTP

final class HTTPResponseTests: XCTestCase {
    private func wire(_ response: HTTPResponse, closing: Bool = false) -> String {
        String(decoding: response.serialized(closing: closing), as: UTF8.self)
    }

    func testTextHasLengthAndType() {
        XCTAssertEqual(
            wire(.text(200, "hé")),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n\r\nhé")
    }

    func testErrorIsJSONAndClosingAddsConnectionClose() {
        XCTAssertEqual(
            wire(.error(400, "bad \"x\""), closing: true),
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 21\r\nConnection: close\r\n\r\n"
                + #"{"error":"bad \"x\""}"#)
    }

    func testJSONObjectIsSortedAndUnencodableBecomes500() {
        XCTAssertEqual(HTTPResponse.json(201, ["b": 1, "a": [true]]).body, Array(#"{"a":[true],"b":1}"#.utf8))
        XCTAssertEqual(HTTPResponse.json(200, ["x": Double.nan]).status, 500)
        XCTAssertEqual(HTTPResponse.json(200, ["x": Date()]).status, 500)
    }

    func testNoContentHasNeitherBodyNorLength() {
        var response = HTTPResponse.noContent
        response.body = Array("ignored".utf8)
        XCTAssertEqual(wire(response), "HTTP/1.1 204 No Content\r\n\r\n")
    }

    func testHandlerHeadersCannotOverrideFramingOrSplitTheResponse() {
        var response = HTTPResponse.text(200, "ok")
        response.headers.add("Content-Length", "99")
        response.headers.add("X-Evil", "a\r\nSet-Cookie: x=1")
        response.headers.add("X-Fine", "yes")
        XCTAssertEqual(
            wire(response),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nX-Fine: yes\r\nContent-Length: 2\r\n\r\nok")
    }
}

extension HTTPResponseTests {
    func testSlashesAreNotEscaped() {
        XCTAssertEqual(HTTPResponse.error(404, "no such resource: /v1/x").body, Array(#"{"error":"no such resource: /v1/x"}"#.utf8))
    }
}
