import Foundation
import XCTest

@testable import RelayHTTP

final class HTTPRouterTests: XCTestCase {
    private func json(_ response: HTTPResponse) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    func testParametersAreExtracted() throws {
        let response = ServerFixture.router.respond(to: HTTPRequest(method: "GET", path: "/v1/sessions/s-ab12"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(try json(response)["id"] as? String, "s-ab12")
    }

    func testUnknownPathIs404WithJSONError() throws {
        for path in ["/nope", "/v1/sessions/", "/v1/sessions/a/b", "/hello/"] {
            let response = ServerFixture.router.respond(to: HTTPRequest(method: "GET", path: path))
            XCTAssertEqual(response.status, 404, path)
            XCTAssertEqual(try json(response)["error"] as? String, "no such resource: \(path)")
        }
    }

    func testWrongMethodIs405WithAllow() throws {
        let response = ServerFixture.router.respond(to: HTTPRequest(method: "POST", path: "/v1/sessions/x"))
        XCTAssertEqual(response.status, 405)
        XCTAssertEqual(response.headers["allow"], "GET, DELETE")
        XCTAssertTrue((try json(response)["error"] as? String ?? "").contains("POST"))
    }

    func testFirstMatchingRouteWins() {
        var router = HTTPRouter()
        router.add("GET", "/v1/sessions/stats") { _, _ in .text(200, "literal") }
        router.add("GET", "/v1/sessions/{id}") { _, p in .text(200, "id \(p["id"]!)") }
        XCTAssertEqual(router.respond(to: HTTPRequest(method: "GET", path: "/v1/sessions/stats")).body, Array("literal".utf8))
        XCTAssertEqual(router.respond(to: HTTPRequest(method: "GET", path: "/v1/sessions/7")).body, Array("id 7".utf8))
    }

    func testBearerToken() {
        func request(_ authorization: String?) -> HTTPRequest {
            var headers = HTTPHeaders()
            if let authorization { headers.add("Authorization", authorization) }
            return HTTPRequest(method: "GET", path: "/v1/sessions", headers: headers)
        }
        XCTAssertTrue(isAuthorized(request(nil), token: nil), "no token configured: open")
        XCTAssertTrue(isAuthorized(request("Bearer s3cret"), token: "s3cret"))
        XCTAssertTrue(isAuthorized(request("bearer s3cret"), token: "s3cret"), "scheme is case-insensitive")
        XCTAssertFalse(isAuthorized(request(nil), token: "s3cret"))
        XCTAssertFalse(isAuthorized(request("Bearer s3cre"), token: "s3cret"), "prefix")
        XCTAssertFalse(isAuthorized(request("Bearer s3cret2"), token: "s3cret"), "longer")
        XCTAssertFalse(isAuthorized(request("Bearer S3CRET"), token: "s3cret"), "token is case-sensitive")
        XCTAssertFalse(isAuthorized(request("Basic s3cret"), token: "s3cret"))
        XCTAssertFalse(isAuthorized(request("Bearer "), token: ""), "an empty token authorizes nothing")
        XCTAssertFalse(isAuthorized(request("s3cret"), token: "s3cret"))
    }

    func testConstantTimeEqual() {
        XCTAssertTrue(constantTimeEqual([], []))
        XCTAssertTrue(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(constantTimeEqual([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(constantTimeEqual([1, 2], [1, 2, 0]), "a trailing zero must not compare equal")
        XCTAssertFalse(constantTimeEqual(Array(repeating: 0, count: 256), []), "length difference of 256")
    }
}
