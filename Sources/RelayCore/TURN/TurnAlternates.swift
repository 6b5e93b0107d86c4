import NetAddress

/// The sibling relays a TURN server names in ALTERNATE-SERVER (RFC 8489 section 10) when it
/// will not take a new allocation: full, out of relayed ports, or draining before a stop.
///
/// Contract: a redirect names an alternate of the client's transport and address family, so
/// the client can reach it the way it reached this relay; without one the Allocate is refused
/// as it would be without alternates (403 while draining). The lists never contain this
/// relay's own listeners (the options leave them out, so one list can serve a whole fleet).
public struct TurnAlternates: Sendable, Equatable {
    /// How a client reached the relay, for choosing an alternate it can reach the same way.
    public enum Transport: Sendable {
        /// UDP; TCP clients will use the same list (a TURN port takes both, as 3478 does).
        case plain
        /// TURN over TLS (RFC 8656 section 3.1), which also gets ALTERNATE-DOMAIN.
        case tls
    }

    /// `--turn-alternate HOST:PORT`: for UDP (and later TCP) clients.
    public var plain: [Endpoint]
    /// `--turn-alternate tls:HOST:PORT`: for TLS clients, once the relay has TLS listeners.
    public var tls: [Endpoint]
    /// `--turn-alternate-domain`: the name the TLS alternates' certificates carry, sent as
    /// ALTERNATE-DOMAIN (RFC 8489 section 14.16) so the client checks the right one.
    public var domain: String?

    public init(plain: [Endpoint] = [], tls: [Endpoint] = [], domain: String? = nil) {
        self.plain = plain
        self.tls = tls
        self.domain = domain
    }

    public var isEmpty: Bool { plain.isEmpty && tls.isEmpty }

    /// The alternates a client of `transport` and family (IPv4 or not) may be sent to.
    func candidates(_ transport: Transport, ipv4: Bool) -> [Endpoint] {
        (transport == .plain ? plain : tls).filter { $0.isIPv4 == ipv4 }
    }
}

/// Where one redirected client goes: the ALTERNATE-SERVER, and ALTERNATE-DOMAIN for TLS.
struct TurnRedirect: Sendable, Equatable {
    var server: Endpoint
    var domain: String?
}

/// Why a new Allocate was sent to an alternate; counted by reason in the stats.
public enum TurnRedirectReason: Int, Sendable, CaseIterable {
    /// `--turn-max-allocations` reached.
    case capacity
    /// No relayed port left: TURN's share of the port range is taken, or every port tried
    /// was held by another process.
    case ports
    /// The relay received SIGTERM and drains: existing allocations go on, new ones go elsewhere.
    case draining

    public var name: String {
        switch self {
        case .capacity: "capacity"
        case .ports: "ports"
        case .draining: "draining"
        }
    }
}
