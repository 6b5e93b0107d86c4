/// How a TURN client reaches its server (RFC 8656 section 3.1): UDP datagrams, or a TCP
/// connection per client with or without TLS over it. The relayed side is UDP whatever this is
/// (REQUESTED-TRANSPORT 17; RFC 6062's TCP relaying is refused). One type for the relay, which
/// counts per transport (`rawValue` indexes its counter arrays), and for the clients that speak
/// to it (`--turn-transport`), so the two name a transport the same way.
public enum TurnTransport: Int, Sendable, CaseIterable {
    case udp, tcp, tls

    /// The name in options, stats labels and results.
    public var name: String {
        switch self {
        case .udp: "udp"
        case .tcp: "tcp"
        case .tls: "tls"
        }
    }

    /// The transport `name` names; nil for any other text.
    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = match
    }

    /// Whether each client has its own connection, on which messages are framed.
    public var isStream: Bool { self != .udp }
}
