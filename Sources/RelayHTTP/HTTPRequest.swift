/// One parsed HTTP/1.x request, as the server hands it to the handler.
///
/// Contract: `path` is the raw request target up to `?` (no percent-decoding), `query` is what
/// follows the first `?` (nil when there is none), `body` holds exactly Content-Length bytes.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    public var path: String
    public var query: String?
    /// "HTTP/1.1" or "HTTP/1.0".
    public var version: String
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(
        method: String,
        path: String,
        query: String? = nil,
        version: String = "HTTP/1.1",
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// Whether the client allows the connection to stay open after the response.
    /// HTTP/1.0 connections are always closed: keep-alive there is an old extension not worth
    /// its edge cases for a control API.
    public var wantsKeepAlive: Bool {
        version == "HTTP/1.1" && !headers.hasToken("close", in: "Connection")
    }
}
