import DatagramEngine
import NetAddress

/// Everything a relay is started with: values only, fixed for its lifetime. What changes while
/// it runs (reloadable quotas, TURN's relay-wide counts, the certificate) is the `Relay`'s
/// `turnState`, a `TurnSharedState`.
public struct RelaySettings: Sendable {
    public var engine = EngineConfiguration()
    public var workers = 1
    public var ports: PortPool
    /// The address session sockets bind (port ignored); a wildcard takes every interface.
    public var relayAddress: Endpoint
    /// The address put in session answers (port ignored).
    public var advertiseAddress: Endpoint
    /// This host's interface addresses (read once at start by the executable): with a
    /// wildcard `relayAddress` the relay's sockets send from them, so they are its own too.
    public var hostAddresses: [Endpoint] = []
    public var rules: [ForwardRule] = []
    /// Policy for sessions that do not set their own, and for forward rules.
    public var defaultPolicy = MarkingPolicy()
    public var maxSessions = 10_000
    public var socketOptions = SocketOptions()
    /// The TURN server: nil when no TURN listener is configured. Every worker binds each of
    /// `turnListeners` with SO_REUSEPORT and owns the allocations of the clients it receives.
    public var turn: TurnSettings?
    public var turnListeners: [Endpoint] = []
    /// TURN over TCP and over TLS: every worker listens on each with SO_REUSEPORT, and owns
    /// the connections the kernel gives it. TLS needs `Relay.turnState.tlsContext` set.
    public var turnTCPListeners: [Endpoint] = []
    public var turnTLSListeners: [Endpoint] = []
    /// Whether forward rules mark ECT datagrams CE at the egress cap (sessions carry their own
    /// setting; TURN reads the one in force from `Relay.turnState`, set from this at start).
    public var ecnMarking = true
    /// Where in a limit's burst marking starts, for every limit.
    public var ecnThresholds = ECNThresholds()
    /// The sojourn past which a worker that falls behind marks, for every table. It marks only
    /// with `engine.receiveTimestamps` on (without, datagrams carry no receive time).
    public var backlogThresholds = BacklogThresholds()
    /// The relay-wide egress cap (--egress-rate); nil: none.
    public var egress: EgressBucket?
    /// Where each worker hands the record of every allocation, session and forward-rule client
    /// that ends (on its own thread); nil: no accounting.
    public var accounting: AccountingSink?
    /// The kernel fast path the tables install established flows in; nil: every datagram
    /// goes through the workers (`--fast-path off`, or it could not load).
    public var fastPath: (any FlowOffload)?

    public init(ports: ClosedRange<UInt16>, relayAddress: Endpoint = Endpoint(ipv4: 0, port: 0),
                advertiseAddress: Endpoint = Endpoint(ipv4: 0x7F00_0001, port: 0)) {
        self.ports = PortPool(range: ports)
        self.relayAddress = relayAddress
        self.advertiseAddress = advertiseAddress
    }
}
