import Foundation

/// A response the handler returns and the server serializes.
///
/// Contract: the server always sends `Content-Length` and `Content-Type` (text/plain when the
/// handler set none) and adds `Connection: close` when it will close the connection; it never
/// sends a body, Content-Length or Content-Type with 204 or 304, as RFC 9110 forbids it.
/// A handler that sets `Connection: close` makes the server close after this response.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A plain-text body in UTF-8.
    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: HTTPHeaders([("Content-Type", "text/plain; charset=utf-8")]),
            body: Array(text.utf8))
    }

    /// An already encoded JSON body.
    public static func json(_ status: Int, _ data: Data) -> HTTPResponse {
        json(status, body: Array(data))
    }

    private static func json(_ status: Int, body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", "application/json")]), body: body)
    }

    /// A JSON object encoded with sorted keys (stable output for tests and diffs) and "/" left
    /// unescaped, so paths and "HTTP/1.1" in error reasons read as written (`JSONText`).
    /// An object that cannot be encoded (NaN, a non-JSON type) becomes a 500, never invalid JSON.
    public static func json(_ status: Int, _ object: [String: Any]) -> HTTPResponse {
        guard let body = JSONText.encode(object) else {
            return .error(500, "internal error: response is not encodable as JSON")
        }
        return json(status, body: body)
    }

    /// `{"error": reason}`, the body every API error has.
    public static func error(_ status: Int, _ reason: String) -> HTTPResponse {
        .json(status, ["error": reason])
    }

    public static var noContent: HTTPResponse { HTTPResponse(status: 204) }

    /// Whether the handler asked for the connection to be closed after this response.
    var asksToClose: Bool { headers.hasToken("close", in: "Connection") }

    /// The bytes on the wire. `closing` adds `Connection: close`; the caller closes afterwards.
    func serialized(closing: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(HTTPResponse.reasonPhrase(status))\r\n"
        var fields = headers
        fields.remove("Content-Length")
        fields.remove("Transfer-Encoding")
        fields.remove("Connection")
        let bodyless = status == 204 || status == 304 || (100..<200).contains(status)
        if bodyless {
            fields.remove("Content-Type")
        } else {
            if !fields.contains("Content-Type") {
                fields.add("Content-Type", "text/plain; charset=utf-8")
            }
            fields.add("Content-Length", String(body.count))
        }
        if closing { fields.add("Connection", "close") }
        for field in fields where HTTPResponse.isSafeFieldText(field.name + field.value) {
            head += "\(field.name): \(field.value)\r\n"
        }
        head += "\r\n"
        var bytes = Array(head.utf8)
        if !bodyless { bytes += body }
        return bytes
    }

    /// A header a handler built from request data must not be able to split the response.
    private static func isSafeFieldText(_ text: String) -> Bool {
        !text.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}
