import NetAddress
import RelayCore
import STUN

/// The log line of a TURN notice (`TurnNotice`), in either `--log-format`.
///
/// Contract: a failed authentication is `TURN authentication failed` with `client` (the
/// address alone, so fail2ban's `<HOST>` takes it as it is), `port`, `transport`, `user` and
/// `realm` as sent (left out when absent), `reason` and `suppressed` (that source's failures
/// not written since its previous line). A refusal is `TURN request refused` with `code` (none
/// for a connection closed on accept), `cause`, `client`, `port`, `peer` for a refused peer,
/// `why` (the sentence naming the option that cures it) and `suppressed`. Failures that a mistyped or brute-forced credential makes
/// (`unknown_user`, `bad_integrity`, `expired`) and every refusal are warnings; the rest (a
/// stale nonce, which clients meet in normal use and retry at once) are info.
struct TurnNoticeLine {
    static let authenticationFailed = "TURN authentication failed"
    static let refused = "TURN request refused"

    /// The options whose values the `why` sentences name.
    let options: ServerOptions
    /// Permissions an allocation may hold (fixed, not an option).
    let maxPermissions: Int

    func write(_ notice: TurnNotice, to log: Log) {
        switch notice {
        case .authenticationFailed(let failure):
            let level: LogLevel = [.unknownUser, .badIntegrity, .expired].contains(failure.reason) ? .warning : .info
            log.write(level, Self.authenticationFailed, Self.fields(failure))
        case .refused(let refusal):
            log.write(.warning, Self.refused, fields(refusal))
        }
    }

    static func fields(_ failure: AuthenticationFailureNotice) -> [LogField] {
        var fields = [LogField("client", .text(failure.client.hostText)), LogField("port", .integer(UInt64(failure.client.port))),
                      LogField("transport", .text(failure.transport.name))]
        if let user = failure.username { fields.append(LogField("user", .text(user))) }
        if let realm = failure.realm { fields.append(LogField("realm", .text(realm))) }
        fields.append(LogField("reason", .text(failure.reason.name)))
        fields.append(LogField("suppressed", .integer(failure.suppressed)))
        return fields
    }

    func fields(_ refusal: RefusalNotice) -> [LogField] {
        var fields = refusal.code.map { [LogField("code", .integer(UInt64($0.rawValue)))] } ?? []
        fields += [LogField("cause", .text(Self.name(refusal.cause))), LogField("client", .text(refusal.client.hostText)),
                   LogField("port", .integer(UInt64(refusal.client.port)))]
        if case .peerRefused(_, let peer) = refusal.cause { fields.append(LogField("peer", .text(peer.description))) }
        fields.append(LogField("why", .text(why(refusal.cause))))
        fields.append(LogField("suppressed", .integer(refusal.suppressed)))
        return fields
    }

    static func name(_ cause: RefusalCause) -> String {
        switch cause {
        case .allocationLimit: "allocation_limit"
        case .userAllocationLimit: "user_allocation_limit"
        case .noRelayedPort: "no_relayed_port"
        case .relayedBindFailed: "relayed_bind_failed"
        case .channelLimit: "channel_limit"
        case .permissionLimit: "permission_limit"
        case .unknownReservation: "unknown_reservation"
        case .familyNotRelayed: "family_not_relayed"
        case .peerRefused: "peer_refused"
        case .connectionLimit: "connection_limit"
        case .sourceConnectionLimit: "source_connection_limit"
        }
    }

    /// What happened, and what the operator can change.
    func why(_ cause: RefusalCause) -> String {
        switch cause {
        case .allocationLimit:
            "the relay holds --turn-max-allocations (\(options.turnMaxAllocations)) allocations; raise it, or name siblings with --turn-alternate"
        case .userAllocationLimit:
            "the user holds --turn-max-allocations-per-user (\(options.turnMaxAllocationsPerUser)) allocations; raise it if the user is shared"
        case .noRelayedPort:
            "no free relayed port: TURN may hold \(options.turnPortLimit) ports of --ports \(options.ports) (--turn-port-share "
                + "\(options.turnPortShare)) and they are in use or held by other processes; widen --ports or raise --turn-port-share"
        case .relayedBindFailed(let error):
            "cannot bind a relayed socket (\(error)); --relay-address \(options.relayAddress) must be an address of this host"
        case .channelLimit:
            "an allocation holds --turn-max-channels (\(options.turnMaxChannels)) channels; raise it"
        case .permissionLimit:
            "an allocation holds the most permissions one may (\(maxPermissions)); the client asks for too many peers"
        case .unknownReservation:
            "a RESERVATION-TOKEN this relay does not hold (never issued here, redeemed, or unused for 30 s); the client's to fix"
        case .familyNotRelayed(let family):
            "no relayed address of \(family == .ipv6 ? "IPv6" : "IPv4"): --relay-address \(options.relayAddress) gives none; "
                + "give \"::\" (both families) or an address of that family"
        case .peerRefused(.operatorDenied, _):
            "the peer is inside --turn-denied-peer"
        case .peerRefused(.relaySocket, _):
            "the peer is one of the relay's own sockets, which no client may reach"
        case .peerRefused(let reason, _):
            "the peer policy refuses the peer (\(reason.rawValue)); if clients should reach it, allow it with --turn-allowed-peer"
        case .connectionLimit:
            "the relay holds --turn-max-connections (\(options.turnMaxConnections)) TCP and TLS connections; the new one was "
                + "closed on accept; raise it"
        case .sourceConnectionLimit:
            "the client's address holds --turn-max-connections-per-source (\(options.turnMaxConnectionsPerSource)) connections; "
                + "the new one was closed on accept; raise it if many clients share the address (a NAT)"
        }
    }
}
