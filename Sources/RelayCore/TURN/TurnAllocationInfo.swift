import DatagramEngine
import NetAddress

/// One allocation as the control API lists it (GET /v1/turn/allocations).
public struct TurnAllocationInfo: Sendable {
    public var worker: Int
    public var username: String
    public var client: Endpoint
    public var relayed: [Endpoint]
    public var ageSeconds: Double
    public var expiresInSeconds: Double
    /// Peer addresses with a permission now (port 0).
    public var permissions: [Endpoint]
    public var channels: [(number: UInt16, peer: Endpoint)]
    public var counters: AllocationCounters

    public init(worker: Int, username: String, client: Endpoint, relayed: [Endpoint], ageSeconds: Double,
                expiresInSeconds: Double, permissions: [Endpoint], channels: [(number: UInt16, peer: Endpoint)],
                counters: AllocationCounters) {
        self.worker = worker
        self.username = username
        self.client = client
        self.relayed = relayed
        self.ageSeconds = ageSeconds
        self.expiresInSeconds = expiresInSeconds
        self.permissions = permissions
        self.channels = channels
        self.counters = counters
    }
}

extension TurnTable {
    /// Up to `limit` allocations, oldest first.
    func describeAllocations(limit: Int, worker: Int) -> [TurnAllocationInfo] {
        let live = allocations.filter(\.live).sorted { $0.created < $1.created }.prefix(limit)
        return live.map { allocation in
            TurnAllocationInfo(
                worker: worker, username: allocation.username, client: allocation.client.address,
                relayed: [allocation.relay4, allocation.relay6].compactMap { $0?.advertised },
                ageSeconds: Double(now &- allocation.created) / 1e9,
                expiresInSeconds: Double(allocation.expires > now ? allocation.expires - now : 0) / 1e9,
                permissions: allocation.permissions.filter { $0.value > now }.keys.sorted { $0.description < $1.description },
                channels: allocation.channels.entries.filter { $0.expires > now }.map { ($0.number, $0.peer) }.sorted { $0.number < $1.number },
                counters: allocation.counters)
        }
    }
}
