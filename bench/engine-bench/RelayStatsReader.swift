import Foundation
import RelayObservation
import StatsKeys

/// The relay's counters from its GET /v1/stats (the stats contract: README, "Stats"), through
/// the load generator's HTTP client, which starts no thread of its own.
enum RelayStatsReader {
    static func counters(port: UInt16) throws -> ForwarderCounters {
        let response = try HTTPClient(url: "http://127.0.0.1:\(port)").request("GET", "/v1/stats")
        guard response.status == 200, let stats = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] else {
            throw BenchError("GET http://127.0.0.1:\(port)/v1/stats answered \(response.status): \(response.text.prefix(200))")
        }
        func count(_ key: String) throws -> UInt64 {
            guard let value = stats[key] as? NSNumber else { throw BenchError("/v1/stats has no number \(key)") }
            return value.uint64Value
        }
        return ForwarderCounters(forwarded: try count(StatsKey.packetsOut), syscalls: try count(StatsKey.syscalls), gso: try count(StatsKey.gsoSegments))
    }
}
