import Foundation
import RelayCore
import RelayHTTP

/// The HTTP routes: the session API (bearer token when configured), stats, metrics, health
/// and readiness. The token, session defaults and ready threshold are read per request, so a
/// reload reaches the next one.
struct ControlAPI: Sendable {
    let relay: Relay
    let settings: ReloadableSettings
    let engine: String
    let engineReason: String
    let started: Date
    let fastPath: FastPathStatus
    /// Seconds a refused POST /v1/sessions asks the caller to wait before trying this relay
    /// again (Retry-After): sessions end all the time, so room comes back soon; a matchmaker
    /// goes to another relay meanwhile.
    static let retryAfterSeconds = 5

    var router: HTTPRouter {
        var router = HTTPRouter()
        router.add("GET", "/healthz") { _, _ in
            relay.isDraining ? .text(503, "draining\n") : .text(200, "ok\n")
        }
        router.add("GET", "/readyz") { _, _ in
            Readiness(draining: relay.isDraining, threshold: settings.values.readyThreshold,
                      capacity: Capacity(relay: relay, workers: relay.stats()), fastPath: fastPath.kernel).response
        }
        router.add("GET", "/v1/stats") { _, _ in .json(200, report().json) }
        router.add("GET", "/metrics") { _, _ in report().prometheus.response }
        router.add("POST", "/v1/sessions") { request, _ in authorized(request) { create(request) } }
        router.add("GET", "/v1/sessions") { request, _ in
            authorized(request) {
                switch relay.sessions() {
                case .success(let all): .json(200, ["sessions": all.map(SessionJSON.object)])
                case .failure(let error): .error(503, error.description)
                }
            }
        }
        router.add("GET", "/v1/sessions/{id}") { request, parameters in
            authorized(request) {
                switch relay.session(parameters["id"] ?? "") {
                case .success(let info?): .json(200, SessionJSON.object(info))
                case .success(nil): .error(404, "no such session")
                case .failure(let error): .error(503, error.description)
                }
            }
        }
        router.add("DELETE", "/v1/sessions/{id}") { request, parameters in
            authorized(request) {
                switch relay.deleteSession(parameters["id"] ?? "") {
                case .success(true): .noContent
                case .success(false): .error(404, "no such session")
                case .failure(let error): .error(503, error.description)
                }
            }
        }
        router.add("GET", "/v1/turn/allocations") { request, _ in
            authorized(request) { TurnAllocationJSON.list(relay, query: request.query) }
        }
        return router
    }

    private func report() -> StatsReport {
        StatsReport(relay: relay, engine: engine, engineReason: engineReason, started: started, fastPath: fastPath)
    }

    private func authorized(_ request: HTTPRequest, _ body: () -> HTTPResponse) -> HTTPResponse {
        guard isAuthorized(request, token: settings.values.controlToken) else {
            var response = HTTPResponse.error(401, "missing or wrong bearer token (Authorization: Bearer TOKEN)")
            response.headers.set("WWW-Authenticate", "Bearer")
            return response
        }
        return body()
    }

    private func create(_ request: HTTPRequest) -> HTTPResponse {
        let sessionRequest: SessionRequest
        let values = settings.values
        do {
            sessionRequest = try SessionJSON.request(from: request.body, defaults: values.sessionPolicy,
                                                     idleTimeout: values.sessionIdleTimeoutSeconds,
                                                     ecnMarking: values.sessionECNMarking)
        } catch {
            return .error(400, error.description)
        }
        switch relay.createSession(sessionRequest) {
        case .success(let info): return .json(201, SessionJSON.object(info))
        case .failure(.socket(let text)): return .error(500, text)
        case .failure(let error): return Self.unavailable(error)
        }
    }

    /// 503 for a session the relay cannot take now, with Retry-After and a reason a matchmaker
    /// can act on: `draining`, `sessions` (the cap), `ports` (the range), `unresponsive`.
    static func unavailable(_ error: RelayError) -> HTTPResponse {
        let reason = switch error {
        case .draining: "draining"
        case .sessionCapReached: "sessions"
        case .portsExhausted: "ports"
        default: "unresponsive"
        }
        var response = HTTPResponse.json(503, ["error": error.description, "reason": reason])
        response.headers.set("Retry-After", String(retryAfterSeconds))
        return response
    }
}
