import FastPath
import RelayCore
import RelayHTTP

/// How much of each capacity that can refuse new work the relay has in use: TURN allocations
/// (`--turn-max-allocations`), sessions (`--max-sessions`), ports of the range, TURN's share
/// of them (`--turn-port-share`) and TURN's connections over TCP and TLS
/// (`--turn-max-connections`). What /readyz judges and /v1/stats and /metrics report.
///
/// Contract: cheap enough for a probe answered before other requests: a few locks, no
/// question to a worker. Figures are at most one stats snapshot (~100 ms) old.
struct Capacity {
    struct Resource: Equatable {
        /// As in /metrics `resource="..."` and the JSON keys.
        let name: String
        let inUse: Int
        let total: Int

        /// Whether `inUse` has reached `threshold` of `total` (at 1, only a full resource has).
        func isFull(threshold: Double) -> Bool { total > 0 && Double(inUse) >= threshold * Double(total) }

        var json: [String: Any] { ["in_use": inUse, "total": total] }
    }

    let resources: [Resource]

    init(resources: [Resource]) { self.resources = resources }

    /// `workers`: the snapshots the session count is summed from (the workers' own counts:
    /// sessions they expired are gone from them at once).
    init(relay: Relay, workers: [WorkerStats]) {
        let ports = relay.settings.ports
        var resources = [
            Resource(name: "sessions", inUse: workers.reduce(0) { $0 + $1.sessions }, total: relay.maxSessions),
            Resource(name: "ports", inUse: ports.held, total: ports.range.count),
        ]
        if let turn = relay.settings.turn {
            resources.insert(Resource(name: "allocations", inUse: relay.turnState.allocations,
                                      total: turn.maxAllocations), at: 0)
            resources.append(Resource(name: "turn_ports", inUse: ports.heldForTURN, total: ports.turnLimit))
            // TURN over TCP and TLS: a full relay closes new connections on accept.
            if !relay.settings.turnTCPListeners.isEmpty || !relay.settings.turnTLSListeners.isEmpty {
                resources.append(Resource(name: "turn_connections", inUse: relay.turnState.connections,
                                          total: turn.streamLimits.maxConnections))
            }
        }
        self.resources = resources
    }

    var json: [String: Any] {
        Dictionary(uniqueKeysWithValues: resources.map { ($0.name, $0.json) })
    }

    func prometheus(into text: inout PrometheusText) {
        for resource in resources {
            let labels: PrometheusText.Labels = [("resource", resource.name)]
            text.gauge("mediarelay_capacity_in_use", help: "Capacity in use that can refuse new work, by resource.",
                       labels: labels, value: resource.inUse)
            text.gauge("mediarelay_capacity_total", help: "Capacity that can refuse new work, by resource.",
                       labels: labels, value: resource.total)
        }
    }
}

/// /readyz: whether the relay takes new work, for a load balancer or Kubernetes to send new
/// clients elsewhere before they are refused. 503 while draining, or when any capacity has
/// reached `--ready-threshold`; 200 otherwise. /healthz stays the liveness check.
struct Readiness {
    let draining: Bool
    let threshold: Double
    let capacity: Capacity
    /// The kernel fast path's table, shown beside the capacities but not judged: a full
    /// table leaves new flows on the user-space path, which still takes them.
    var fastPath: KernelFastPath? = nil

    var full: [Capacity.Resource] { capacity.resources.filter { $0.isFull(threshold: threshold) } }
    var isReady: Bool { !draining && full.isEmpty }

    /// "ready", "draining" or "capacity".
    var reason: String { draining ? "draining" : (full.isEmpty ? "ready" : "capacity") }

    /// The body says why, with the figures, so an operator reading a probe failure needs nothing else.
    var response: HTTPResponse {
        var detail = "takes new work"
        if draining {
            detail = "draining after SIGTERM: existing work goes on, new work goes elsewhere"
        } else if !full.isEmpty {
            detail = full.map { "\($0.name) \($0.inUse) of \($0.total)" }.joined(separator: ", ")
                + " at or past the ready threshold \(threshold)"
        }
        var body: [String: Any] = [
            "ready": isReady, "reason": reason, "detail": detail, "threshold": threshold,
            "full": full.map(\.name), "capacity": capacity.json,
        ]
        if let fastPath {
            let entries = fastPath.count
            body["fast_path"] = ["entries": entries, "capacity": fastPath.capacity, "full": entries >= fastPath.capacity,
                                 "refusals": fastPath.refusals] as [String: Any]
        }
        return .json(isReady ? 200 : 503, body)
    }
}
