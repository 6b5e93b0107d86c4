/// Maps (method, path pattern) to handlers; the server's handler is `router.respond(to:)`.
///
/// Contract: a pattern is a path whose segments are literals or `{name}`; `{name}` matches one
/// non-empty segment and its text is passed to the handler under `name`. Routes are tried in
/// the order they were added. A path no route matches gets 404 `{"error": ...}`; a path some
/// route matches under other methods gets 405 with `Allow` listing those methods. A value
/// type of `@Sendable` closures, so a finished router can be handed to the server thread.
public struct HTTPRouter: Sendable {
    public typealias Handler = @Sendable (HTTPRequest, [String: String]) -> HTTPResponse

    private struct Route: Sendable {
        var method: String
        var segments: [Segment]
        var handler: Handler
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []

    public init() {}

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = HTTPRouter.split(pattern).map { part -> Segment in
            if part.hasPrefix("{"), part.hasSuffix("}"), part.count > 2 {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(String(part))
        }
        routes.append(Route(method: method, segments: segments, handler: handler))
    }

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        let parts = HTTPRouter.split(request.path)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = HTTPRouter.match(route.segments, parts) else { continue }
            if route.method == request.method { return route.handler(request, parameters) }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        if allowed.isEmpty {
            return .error(404, "no such resource: \(request.path)")
        }
        var response = HTTPResponse.error(
            405, "method \(request.method) not allowed on \(request.path); allowed: \(allowed.joined(separator: ", "))")
        response.headers.set("Allow", allowed.joined(separator: ", "))
        return response
    }

    /// "/v1/sessions/" keeps its empty last segment, so it does not match "/v1/sessions".
    private static func split(_ path: String) -> [Substring] {
        Array(path.split(separator: "/", omittingEmptySubsequences: false).dropFirst())
    }

    private static func match(_ segments: [Segment], _ parts: [Substring]) -> [String: String]? {
        guard segments.count == parts.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let text):
                guard part == text else { return nil }
            case .parameter(let name):
                guard !part.isEmpty else { return nil }
                parameters[name] = String(part)
            }
        }
        return parameters
    }
}
