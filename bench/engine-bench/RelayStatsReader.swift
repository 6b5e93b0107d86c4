import JSONSyntax
import RelayObservation
import StatsKeys

/// The relay's counters from its GET /v1/stats (the stats contract: README, "Stats"), through
/// the load generator's HTTP client, which starts no thread of its own.
enum RelayStatsReader {
    static func counters(port: UInt16) throws -> ForwarderCounters {
        let response = try HTTPClient(url: "http://127.0.0.1:\(port)").request("GET", "/v1/stats")
        guard response.status == 200, let stats = try? JSONValue(parsing: response.body), stats.members != nil else {
            throw BenchError("GET http://127.0.0.1:\(port)/v1/stats answered \(response.status): \(response.text.prefix(200))")
        }
        func count(_ key: String) throws -> UInt64 {
            guard let value = stats[key]?.integer.flatMap({ UInt64(exactly: $0) }) else {
                throw BenchError("/v1/stats has no count \(key) (a whole number, not negative)")
            }
            return value
        }
        return ForwarderCounters(forwarded: try count(StatsKey.packetsOut), syscalls: try count(StatsKey.syscalls), gso: try count(StatsKey.gsoSegments))
    }
}
