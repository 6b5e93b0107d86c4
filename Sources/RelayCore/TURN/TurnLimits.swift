/// The TURN quotas a running relay can change without a restart (`Relay.updateLimits`); the
/// workers read them from `TurnShared` on the control path, never per relayed datagram.
public struct TurnLimits: Sendable, Equatable {
    /// Channels per allocation: a ChannelBind for one more is refused with 508. Channels to one
    /// address on many ports share one permission, so the permission cap does not bound them.
    /// A WebRTC client binds one per remote candidate it reaches through the relay, a handful;
    /// 256 keeps an allocation's channels near 45 KB (about 174 B each), where the 16,384
    /// channel numbers took 2.8 MB.
    public var maxChannels = 256
    /// Answers per second to requests that did not authenticate, per source address and
    /// worker (`AnswerBudget`), with a burst of `burstSeconds` times as many; 0: no limit.
    /// A real client needs one such answer per allocation (its 401) and one per nonce lifetime
    /// (a 438 every 10 minutes). 10 a second with a burst of 20 reflects at most ~1.2 KB/s per
    /// worker at a forged address (a 401 is about 116 bytes); clients behind one NAT address
    /// get more as they authenticate (credit, up to `creditSeconds` of this rate).
    public var unauthenticatedRate = 10
    /// The burst is this many seconds of the rate: room for a client's retransmissions and a
    /// few clients behind one NAT starting at once.
    public static let burstSeconds = 2
    /// The most credit a source address earns by authenticating, in seconds of the rate.
    public static let creditSeconds = 100

    public init(maxChannels: Int = 256, unauthenticatedRate: Int = 10) {
        self.maxChannels = maxChannels
        self.unauthenticatedRate = unauthenticatedRate
    }
}
