import ClientSockets
import JSONSyntax

/// One session the relay created: its id and the address of each leg.
public struct RelaySession: Sendable {
    public let id: String
    public let legs: [SocketAddress]

    /// Sessions that exist without a control API, listed in a file (the C reference
    /// forwarder's `--legs-file`): one line per session, its legs' HOST:PORT separated by spaces.
    /// The first `count` are used.
    package static func listed(in path: String, count: Int) throws(LoadError) -> [RelaySession] {
        guard let text = readSmallFile(path, limit: 1 << 20) else { throw LoadError("--legs \(path): cannot read it") }
        var sessions: [RelaySession] = []
        for line in text.split(separator: "\n").prefix(count) {
            var legs: [SocketAddress] = []
            for address in line.split(separator: " ") { legs.append(try SocketAddress(hostPort: String(address))) }
            sessions.append(RelaySession(id: "listed-\(sessions.count)", legs: legs))
        }
        guard sessions.count == count else { throw LoadError("--legs \(path): \(sessions.count) sessions listed, --streams asks for \(count)") }
        return sessions
    }
}

/// The relay's control API (POST/DELETE /v1/sessions, GET /v1/stats, GET /healthz), with the
/// bearer token when one is given. A 401 becomes an error that says the token was refused.
public struct RelayControl: Sendable {
    public let client: HTTPClient
    public let token: String?

    public init(client: HTTPClient, token: String?) {
        self.client = client
        self.token = token
    }

    private var headers: [(String, String)] { token.map { [("Authorization", "Bearer \($0)")] } ?? [] }

    private func call(_ method: String, _ path: String, body: [UInt8] = []) throws(LoadError) -> HTTPClientResponse {
        let response = try client.request(method, path, body: body, headers: headers)
        if response.status == 401 {
            throw LoadError("\(method) \(path): relay at \(client.server) refused the control token (401); pass the right one with --token")
        }
        return response
    }

    /// True when GET /healthz answers 200.
    public func healthy() -> Bool {
        (try? client.request("GET", "/healthz"))?.status == 200
    }

    /// Creates a session with `legs` legs and `fields`, the members of a JSON object (its text
    /// between the braces, `--session`).
    public func createSession(legs: Int = 2, fields: String = "") throws(LoadError) -> RelaySession {
        let more = fields.isEmpty ? "" : "," + fields
        let response = try call("POST", "/v1/sessions", body: Array("{\"legs\":\(legs)\(more)}".utf8))
        guard response.status == 201 else {
            throw LoadError("POST /v1/sessions: relay answered \(response.status) \(response.text.prefix(200))")
        }
        guard let object = try? JSONValue(parsing: response.body),
              let id = object["id"]?.string,
              let legList = object["legs"]?.elements
        else { throw LoadError("POST /v1/sessions: answer lacks id or legs: \(response.text.prefix(200))") }
        var legs: [SocketAddress] = []
        for leg in legList {
            guard let address = leg["address"]?.string, let port = leg["port"]?.integer,
                  let p = UInt16(exactly: port)
            else { throw LoadError("POST /v1/sessions: leg without address/port: \(response.text.prefix(200))") }
            legs.append(try SocketAddress(host: address, port: p))
        }
        return RelaySession(id: id, legs: legs)
    }

    /// Deletes a session; a 404 (already gone) is not an error.
    public func deleteSession(_ id: String) throws(LoadError) {
        let response = try call("DELETE", "/v1/sessions/\(id)")
        guard response.status == 204 || response.status == 404 else {
            throw LoadError("DELETE /v1/sessions/\(id): relay answered \(response.status)")
        }
    }

    public func stats() throws(LoadError) -> RelayStats {
        let response = try call("GET", "/v1/stats")
        guard response.status == 200 else { throw LoadError("GET /v1/stats: relay answered \(response.status)") }
        return try RelayStats(json: response.body)
    }
}
