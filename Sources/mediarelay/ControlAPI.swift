import Foundation
import RelayCore
import RelayHTTP

/// The HTTP routes: the session API (bearer token when configured), stats, metrics, health.
struct ControlAPI: Sendable {
    let relay: Relay
    let token: String?
    let engine: String
    let engineReason: String
    let started: Date
    let defaults: MarkingPolicy
    let idleTimeout: Int

    var router: HTTPRouter {
        var router = HTTPRouter()
        router.add("GET", "/healthz") { _, _ in
            relay.isDraining ? .text(503, "draining\n") : .text(200, "ok\n")
        }
        router.add("GET", "/v1/stats") { _, _ in .json(200, report().json) }
        router.add("GET", "/metrics") { _, _ in report().prometheus.response }
        router.add("POST", "/v1/sessions") { request, _ in authorized(request) { create(request) } }
        router.add("GET", "/v1/sessions") { request, _ in
            authorized(request) { .json(200, ["sessions": relay.sessions().map(SessionJSON.object)]) }
        }
        router.add("GET", "/v1/sessions/{id}") { request, parameters in
            authorized(request) {
                guard let info = relay.session(parameters["id"] ?? "") else { return .error(404, "no such session") }
                return .json(200, SessionJSON.object(info))
            }
        }
        router.add("DELETE", "/v1/sessions/{id}") { request, parameters in
            authorized(request) {
                relay.deleteSession(parameters["id"] ?? "") ? .noContent : .error(404, "no such session")
            }
        }
        return router
    }

    private func report() -> StatsReport {
        StatsReport(relay: relay, engine: engine, engineReason: engineReason, started: started)
    }

    private func authorized(_ request: HTTPRequest, _ body: () -> HTTPResponse) -> HTTPResponse {
        guard isAuthorized(request, token: token) else {
            var response = HTTPResponse.error(401, "missing or wrong bearer token (Authorization: Bearer TOKEN)")
            response.headers.set("WWW-Authenticate", "Bearer")
            return response
        }
        return body()
    }

    private func create(_ request: HTTPRequest) -> HTTPResponse {
        let sessionRequest: SessionRequest
        do {
            sessionRequest = try SessionJSON.request(from: request.body, defaults: defaults, idleTimeout: idleTimeout)
        } catch {
            return .error(400, error.description)
        }
        switch relay.createSession(sessionRequest) {
        case .success(let info): return .json(201, SessionJSON.object(info))
        case .failure(.portsExhausted): return .error(503, RelayError.portsExhausted.description)
        case .failure(.socket(let text)): return .error(500, text)
        case .failure(let error): return .error(503, error.description)
        }
    }
}
