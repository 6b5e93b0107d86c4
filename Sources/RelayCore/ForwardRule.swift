import DatagramEngine
import NetAddress

/// A static forward rule: datagrams to `listen` go to `upstream`, each client source through
/// its own upstream socket (so the upstream sees clients as distinct peers); replies return to
/// the client from `listen`.
public struct ForwardRule: Sendable, Equatable {
    public var listen: Endpoint
    public var upstream: Endpoint
    public var policy: MarkingPolicy
    /// Clients silent this long are forgotten and their upstream sockets closed.
    public var idleTimeoutSeconds: Int
    /// New clients beyond this many (across all workers) are refused and counted.
    public var maxClients: Int

    public init(listen: Endpoint, upstream: Endpoint, policy: MarkingPolicy = MarkingPolicy(),
                idleTimeoutSeconds: Int = 60, maxClients: Int = 10_000) {
        self.listen = listen
        self.upstream = upstream
        self.policy = policy
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maxClients = maxClients
    }
}
