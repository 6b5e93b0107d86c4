/// The caps a running relay can change without a restart (`Relay.updateLimits`); everything
/// else in `RelaySettings` is fixed for the relay's lifetime.
public struct RelayLimits: Sendable, Equatable {
    /// Sessions at once; new sessions beyond it are refused.
    public var maxSessions: Int
    /// Clients of each forward rule, across all workers.
    public var maxClientsPerRule: Int
    /// A forward client silent this long is forgotten.
    public var clientIdleTimeoutSeconds: Int
    /// The TURN server's reloadable quotas (ignored without TURN).
    public var turn: TurnLimits
    /// Whether new TURN allocations mark ECT datagrams CE (--ecn-marking; new sessions take it
    /// from the control API's defaults).
    public var ecnMarking: Bool

    public init(maxSessions: Int, maxClientsPerRule: Int, clientIdleTimeoutSeconds: Int, turn: TurnLimits = TurnLimits(),
                ecnMarking: Bool = true) {
        self.maxSessions = maxSessions
        self.maxClientsPerRule = maxClientsPerRule
        self.clientIdleTimeoutSeconds = clientIdleTimeoutSeconds
        self.turn = turn
        self.ecnMarking = ecnMarking
    }
}
