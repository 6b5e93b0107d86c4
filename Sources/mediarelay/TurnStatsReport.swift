import RelayCore
import RelayHTTP
import STUN
import StatsKeys

/// The TURN server's figures in /v1/stats (a "turn" object) and /metrics (mediarelay_turn_*):
/// what is active, allocations made, refused by error code and redirected to an alternate by
/// reason, channels refused at their cap,
/// authentication failures, drops and refused peers by reason, and datagrams and bytes relayed
/// by framing and direction.
enum TurnStatsReport {
    /// The error codes the TURN server answers Allocate with.
    static let refusalCodes: [ErrorCode] = [.badRequest, .unauthenticated, .forbidden, .unknownAttribute,
                                            .allocationMismatch, .staleNonce, .addressFamilyNotSupported,
                                            .wrongCredentials, .unsupportedTransportProtocol,
                                            .peerAddressFamilyMismatch, .allocationQuotaReached, .insufficientCapacity]

    static func json(_ stats: TurnStats) -> [String: Any] {
        let counters = stats.counters
        var refused: [String: Any] = [:]
        for code in refusalCodes { refused[String(code.rawValue)] = counters[refused: code] }
        var auth: [String: Any] = [:]
        for reason in AuthFailure.allCases { auth[reason.name] = counters[auth: reason] }
        var drops: [String: Any] = [:]
        for reason in TurnDropReason.allCases { drops[reason.name] = counters[drop: reason] }
        var peers: [String: Any] = [:]
        for reason in PeerRefusal.allCases { peers[reason.rawValue] = counters[peer: reason] }
        var redirects: [String: Any] = [:]
        for reason in TurnRedirectReason.allCases { redirects[reason.name] = counters[redirect: reason] }
        return [
            StatsKey.Turn.redirects: redirects,
            StatsKey.Turn.allocations: stats.allocations, StatsKey.Turn.permissions: stats.permissions, StatsKey.Turn.channels: stats.channels,
            StatsKey.Turn.allocationsCreated: counters.allocationsCreated, StatsKey.Turn.allocationsDeleted: counters.allocationsDeleted,
            StatsKey.Turn.allocationsExpired: counters.allocationsExpired, StatsKey.Turn.allocationsRefused: refused,
            StatsKey.Turn.channelsRefused: counters.channelsRefused,
            StatsKey.Turn.authFailures: auth, StatsKey.Turn.drops: drops, StatsKey.Turn.peerRefusals: peers, StatsKey.Turn.bindingRequests: counters.bindingRequests,
            StatsKey.Turn.channelDataToPeers: counters.channelDataToPeers, StatsKey.Turn.channelDataToClients: counters.channelDataToClients,
            StatsKey.Turn.indicationsToPeers: counters.indicationsToPeers, StatsKey.Turn.indicationsToClients: counters.indicationsToClients,
            StatsKey.Turn.bytesToPeers: counters.bytesToPeers, StatsKey.Turn.bytesToClients: counters.bytesToClients,
            StatsKey.Turn.ceMarked: SessionJSON.ceMarks(counters.ceMarks),
            StatsKey.Turn.transports: transportsJSON(stats),
        ]
    }

    /// Per transport (udp, tcp, tls): connections open, opened and closed by reason, TLS
    /// handshakes, allocations made, datagrams and bytes relayed each way.
    static func transportsJSON(_ stats: TurnStats) -> [String: Any] {
        let counters = stats.transports
        var result: [String: Any] = [:]
        for transport in TurnTransport.allCases {
            let t = transport.rawValue
            var entry: [String: Any] = [
                StatsKey.Transport.allocationsCreated: counters.allocations[t],
                StatsKey.Transport.datagramsToPeers: counters.datagramsToPeers[t], StatsKey.Transport.datagramsToClients: counters.datagramsToClients[t],
                StatsKey.Transport.bytesToPeers: counters.bytesToPeers[t], StatsKey.Transport.bytesToClients: counters.bytesToClients[t],
            ]
            if transport != .udp {
                var closed: [String: Any] = [:]
                for reason in ConnectionCloseReason.allCases { closed[reason.name] = counters[closed: transport, reason: reason] }
                entry[StatsKey.Transport.connections] = stats.openConnections[t]
                entry[StatsKey.Transport.connectionsOpened] = counters.opened[t]
                entry[StatsKey.Transport.connectionsClosed] = closed
            }
            if transport == .tls {
                var failed: [String: Any] = [:]
                for reason in HandshakeFailure.allCases { failed[reason.name] = counters.handshakesFailed[reason.rawValue] }
                entry[StatsKey.Transport.handshakes] = [
                    StatsKey.Transport.handshakesCompleted: counters.handshakesCompleted, StatsKey.Transport.handshakesFailed: failed,
                ] as [String: Any]
            }
            result[transport.name] = entry
        }
        return result
    }

    static func prometheus(_ stats: TurnStats, worker: Int, into text: inout PrometheusText) {
        let label: PrometheusText.Labels = [("worker", String(worker))]
        let counters = stats.counters
        text.gauge("mediarelay_turn_allocations", help: "TURN allocations open.", labels: label, value: stats.allocations)
        text.gauge("mediarelay_turn_permissions", help: "TURN permissions in force.", labels: label, value: stats.permissions)
        text.gauge("mediarelay_turn_channels", help: "TURN channels bound.", labels: label, value: stats.channels)
        for (event, value) in [("created", counters.allocationsCreated), ("deleted", counters.allocationsDeleted),
                               ("expired", counters.allocationsExpired)] {
            text.counter("mediarelay_turn_allocation_events_total", help: "TURN allocations created, deleted by the client, expired.",
                         labels: label + [("event", event)], value: value)
        }
        for code in refusalCodes {
            text.counter("mediarelay_turn_allocations_refused_total", help: "Allocate requests refused, by error code.",
                         labels: label + [("code", String(code.rawValue))], value: counters[refused: code])
        }
        for reason in TurnRedirectReason.allCases {
            text.counter("mediarelay_turn_redirects_total",
                         help: "Allocate requests answered 300 Try Alternate with a sibling relay, by reason.",
                         labels: label + [("reason", reason.name)], value: counters[redirect: reason])
        }
        text.counter("mediarelay_turn_channels_refused_total",
                     help: "ChannelBind requests for a new channel refused at --turn-max-channels (508).",
                     labels: label, value: counters.channelsRefused)
        for reason in AuthFailure.allCases {
            text.counter("mediarelay_turn_auth_failures_total", help: "TURN requests not authenticated, by reason.",
                         labels: label + [("reason", reason.name)], value: counters[auth: reason])
        }
        for reason in TurnDropReason.allCases {
            text.counter("mediarelay_turn_drops_total", help: "TURN datagrams not relayed, by reason.",
                         labels: label + [("reason", reason.name)], value: counters[drop: reason])
        }
        for reason in PeerRefusal.allCases {
            text.counter("mediarelay_turn_peer_refusals_total", help: "TURN peers refused by the peer policy (403, or a Send dropped), by reason.",
                         labels: label + [("reason", reason.rawValue)], value: counters[peer: reason])
        }
        for (framing, direction, value) in [("channel_data", "to_peer", counters.channelDataToPeers),
                                            ("channel_data", "to_client", counters.channelDataToClients),
                                            ("indication", "to_peer", counters.indicationsToPeers),
                                            ("indication", "to_client", counters.indicationsToClients)] {
            text.counter("mediarelay_turn_datagrams_total", help: "Datagrams relayed by TURN, by framing and direction.",
                         labels: label + [("framing", framing), ("direction", direction)], value: value)
        }
        text.counter("mediarelay_turn_bytes_total", help: "Payload bytes relayed by TURN, by direction.",
                     labels: label + [("direction", "to_peer")], value: counters.bytesToPeers)
        text.counter("mediarelay_turn_bytes_total", help: "Payload bytes relayed by TURN, by direction.",
                     labels: label + [("direction", "to_client")], value: counters.bytesToClients)
        transportsPrometheus(stats, label, into: &text)
    }

    static func transportsPrometheus(_ stats: TurnStats, _ label: PrometheusText.Labels, into text: inout PrometheusText) {
        let counters = stats.transports
        for transport in TurnTransport.allCases {
            let t = transport.rawValue
            let labels = label + [("transport", transport.name)]
            text.counter("mediarelay_turn_transport_allocations_total", help: "TURN allocations made, by the client's transport.",
                         labels: labels, value: counters.allocations[t])
            for (direction, datagrams, bytes) in [("to_peer", counters.datagramsToPeers[t], counters.bytesToPeers[t]),
                                                  ("to_client", counters.datagramsToClients[t], counters.bytesToClients[t])] {
                text.counter("mediarelay_turn_transport_datagrams_total", help: "Datagrams relayed by TURN, by the client's transport and direction.",
                             labels: labels + [("direction", direction)], value: datagrams)
                text.counter("mediarelay_turn_transport_bytes_total", help: "Payload bytes relayed by TURN, by the client's transport and direction.",
                             labels: labels + [("direction", direction)], value: bytes)
            }
            guard transport != .udp else { continue }
            text.gauge("mediarelay_turn_connections", help: "TURN connections over TCP and TLS open.", labels: labels,
                       value: stats.openConnections[t])
            text.counter("mediarelay_turn_connections_opened_total", help: "TURN connections over TCP and TLS accepted and kept.",
                         labels: labels, value: counters.opened[t])
            for reason in ConnectionCloseReason.allCases {
                text.counter("mediarelay_turn_connections_closed_total", help: "TURN connections over TCP and TLS closed (or refused on accept), by reason.",
                             labels: labels + [("reason", reason.name)], value: counters[closed: transport, reason: reason])
            }
        }
        text.counter("mediarelay_turn_tls_handshakes_total", help: "TLS handshakes of TURN clients, by result.",
                     labels: label + [("result", "completed")], value: counters.handshakesCompleted)
        for reason in HandshakeFailure.allCases {
            text.counter("mediarelay_turn_tls_handshakes_total", help: "TLS handshakes of TURN clients, by result.",
                         labels: label + [("result", "failed_" + reason.name)], value: counters.handshakesFailed[reason.rawValue])
        }
    }
}
