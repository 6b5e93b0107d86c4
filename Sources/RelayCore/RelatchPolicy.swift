import DatagramEngine
import NetAddress

/// Which new source a latched session leg may move to once it has been silent for
/// relatch_after_seconds. A NAT rebinding changes the source port, rarely the address; a third
/// party that wants a silent (receive-only) leg's media has another address. So the default
/// follows a peer to a new port but never to another host.
public enum RelatchPolicy: String, Sendable, CaseIterable {
    /// Only a source with the latched peer's IP address (the default).
    case sameAddress = "same_address"
    /// Any source: for peers that roam between networks; any host can take a silent leg.
    case any
    /// Never: the first source keeps the leg for the session's life.
    case never

    /// Whether a leg latched onto `latched` may move to `source`, the leg being silent long
    /// enough. Called only when a leg latches anew, never per forwarded datagram.
    public func allows(from latched: Endpoint, to source: Endpoint) -> Bool {
        switch self {
        case .sameAddress: latched.high == source.high && latched.low == source.low && latched.scope == source.scope
        case .any: true
        case .never: false
        }
    }
}
