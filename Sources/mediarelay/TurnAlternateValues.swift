import NetAddress
import RelayCore

/// One `--turn-alternate [tls:]HOST:PORT`: a sibling relay a new TURN client is sent to (300
/// Try Alternate) when this one is full or draining. Plain entries serve UDP clients (and TCP
/// ones: a TURN port takes both); `tls:` entries are for clients over TLS.
struct TurnAlternateSpec: Equatable, Hashable, Sendable, CustomStringConvertible {
    static let tlsPrefix = "tls:"
    static let accepted = "HOST:PORT or tls:HOST:PORT with an IP literal, [addr]:port for IPv6, not a wildcard, PORT in 1...65535"

    var tls: Bool
    var address: HostPort

    var description: String { (tls ? Self.tlsPrefix : "") + address.description }
    var endpoint: Endpoint { address.endpoint }

    init(parsing text: String) throws(ValueProblem) {
        tls = text.hasPrefix(Self.tlsPrefix)
        do throws(ValueProblem) {
            address = try HostPort(option: tls ? String(text.dropFirst(Self.tlsPrefix.count)) : text)
        } catch {
            throw ValueProblem(expected: "expected \(Self.accepted)")
        }
        // A client told "0.0.0.0" would send to itself: an alternate names one reachable server.
        guard !IPLiteral.isWildcard(address.host) else {
            throw ValueProblem(expected: "a wildcard names no server; expected \(Self.accepted)")
        }
    }

    init(tls: Bool = false, address: HostPort) {
        self.tls = tls
        self.address = address
    }
}

/// `--turn-alternate-domain`: the host name TLS clients check the alternates' certificates
/// against (ALTERNATE-DOMAIN, RFC 8489 section 14.16). A DNS name, as certificates carry it.
enum TurnAlternateDomain {
    static let accepted = "a DNS name such as turn.example.org: labels of letters, digits and '-' "
        + "(not first or last), 1 to 63 bytes each, 253 bytes in all"

    static func check(_ text: String) throws(ValueProblem) -> String {
        let name = text.hasSuffix(".") ? String(text.dropLast()) : text
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let valid = !name.isEmpty && name.utf8.count <= 253 && labels.allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0 & ~0x20) }
        }
        guard valid else { throw ValueProblem(expected: "expected \(accepted)") }
        return name
    }
}

extension ServerOptions {
    /// What the TURN nonce key is derived from: `--turn-nonce-secret`, else the REST secrets
    /// (every relay serving the same credentials holds them, so a fleet shares its nonces with
    /// no option more); empty with static users alone, for a key of this process.
    var turnNonceKeySecrets: [[UInt8]] {
        (turnNonceSecrets.isEmpty ? turnSecrets : turnNonceSecrets).map { Array($0.utf8) }
    }

    /// The alternates as the TURN server takes them.
    var turnAlternatesInForce: TurnAlternates {
        TurnAlternates(plain: turnAlternates.filter { !$0.tls }.map(\.endpoint),
                       tls: turnAlternates.filter(\.tls).map(\.endpoint), domain: turnAlternateDomain)
    }

    /// The alternates that are this relay itself (`TurnServerAddresses.isThisRelay`). They are
    /// left out of what the TURN server names, not refused, so one list of the whole fleet can
    /// be given to every node.
    func alternatesThatAreThisRelay(_ addresses: TurnServerAddresses) -> [TurnAlternateSpec] {
        turnAlternates.filter { addresses.isThisRelay(alternate: $0.endpoint, tls: $0.tls) }
    }

    /// The alternates the TURN server names: all but this relay's own.
    func turnAlternatesInForce(leavingOut addresses: TurnServerAddresses) -> TurnAlternates {
        var kept = self
        kept.turnAlternates.removeAll { addresses.isThisRelay(alternate: $0.endpoint, tls: $0.tls) }
        return kept.turnAlternatesInForce
    }
}
