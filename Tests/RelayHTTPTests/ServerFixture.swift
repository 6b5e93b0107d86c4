import Foundation
import RelayHTTP
import XCTest

/// The routes the socket tests talk to, and a way to run a server for one test.
enum ServerFixture {
    static let bigBody: [UInt8] = (0..<(2 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }

    static var router: HTTPRouter {
        var router = HTTPRouter()
        router.add("GET", "/hello") { _, _ in .text(200, "hello") }
        router.add("GET", "/healthz") { _, _ in .text(200, "ok\n") }
        router.add("POST", "/echo") { request, _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/octet-stream")]), body: request.body)
        }
        router.add("GET", "/where") { request, _ in
            .text(200, "path=\(request.path) query=\(request.query ?? "none")")
        }
        router.add("GET", "/big") { _, _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/octet-stream")]), body: bigBody)
        }
        router.add("GET", "/v1/sessions/{id}") { _, parameters in .json(200, ["id": parameters["id"] ?? ""]) }
        router.add("DELETE", "/v1/sessions/{id}") { _, _ in .noContent }
        return router
    }
}

extension XCTestCase {
    /// A started server on `host`, port 0, stopped when the test ends.
    func startServer(host: String = "127.0.0.1", limits: HTTPLimits = HTTPLimits(), priorityPaths: [String] = []) throws -> HTTPServer {
        let router = ServerFixture.router
        let server = try HTTPServer(host: host, port: 0, limits: limits, priorityPaths: priorityPaths) { router.respond(to: $0) }
        server.start()
        addTeardownBlock { server.stop() }
        return server
    }

    func get(_ path: String, _ server: HTTPServer, extraHeaders: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: test\r\n\(extraHeaders)\r\n"
    }

    /// A fresh connection's GET /hello gets 200 "hello": the server is still healthy.
    func assertStillServes(_ server: HTTPServer, file: StaticString = #filePath, line: UInt = #line) throws {
        let client = try RawClient(port: server.boundPort)
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        let response = try XCTUnwrap(client.readResponse(), file: file, line: line)
        XCTAssertEqual(response.status, 200, file: file, line: line)
        XCTAssertEqual(response.text, "hello", file: file, line: line)
    }
}
