import RelayCore
import RelayHTTP

/// GET /v1/turn/allocations: the TURN allocations with their counters and ECN counts,
/// bounded (`?limit=N`, 100 by default, 1,000 at most) so a busy relay answers quickly.
enum TurnAllocationJSON {
    static let defaultLimit = 100
    static let maximumLimit = 1000

    static func list(_ relay: Relay, query: String?) -> HTTPResponse {
        guard let limit = limit(query) else {
            return .error(400, "limit must be a whole number from 1 to \(maximumLimit)")
        }
        switch relay.turnAllocations(limit: limit + 1) {
        case .success(let all):
            let sorted = all.sorted { $0.ageSeconds > $1.ageSeconds }
            return .json(200, ["allocations": sorted.prefix(limit).map(object), "truncated": sorted.count > limit])
        case .failure(let error):
            return .error(503, error.description)
        }
    }

    /// The `limit` query parameter; nil when present but not in 1...maximumLimit.
    static func limit(_ query: String?) -> Int? {
        guard let query else { return defaultLimit }
        for pair in query.split(separator: "&") where pair.hasPrefix("limit=") {
            guard let value = Int(pair.dropFirst(6)), (1...maximumLimit).contains(value) else { return nil }
            return value
        }
        return defaultLimit
    }

    static func object(_ info: TurnAllocationInfo) -> [String: Any] {
        let counters = info.counters
        return [
            "worker": info.worker, "username": info.username, "client": info.client.description,
            "relayed": info.relayed.map(\.description), "age_seconds": info.ageSeconds,
            "expires_in_seconds": info.expiresInSeconds, "permissions": info.permissions.map(\.hostText),
            "channels": info.channels.map { ["number": Int($0.number), "peer": $0.peer.description] as [String: Any] },
            "channel_data_in": counters.channelDataIn, "channel_data_out": counters.channelDataOut,
            "indications_in": counters.indicationsIn, "indications_out": counters.indicationsOut,
            "bytes_to_peers": counters.bytesToPeers, "bytes_to_client": counters.bytesToClient,
            "ecn_from_client": SessionJSON.ecn(counters.ecnFromClient), "ecn_from_peers": SessionJSON.ecn(counters.ecnFromPeers),
            "dropped": counters.dropped, "ce_marked": SessionJSON.ceMarks(counters.ceMarked),
        ]
    }
}
