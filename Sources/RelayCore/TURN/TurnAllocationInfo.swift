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
