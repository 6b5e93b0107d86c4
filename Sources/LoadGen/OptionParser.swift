import ClientSockets
import Foundation
import RelayObservation
import STUN
import TurnClientKit

/// Parses the options of one load run (mediarelay-load without `compare`) with its table
/// (`RunOptionParser.table`), then checks the rules across options; nil for `--help`.
/// Every error is one line naming the option and the accepted values, in the same form as the
/// relay's own: `--OPTION VALUE: what is accepted`. The helpers below read a value for
/// `compare`'s table too.
public enum RunOptionParser {
    public static func parse(_ arguments: [String]) throws(LoadError) -> LoadOptions? {
        var o = LoadOptions()
        guard let given = try table.parse(arguments, into: &o) else { return nil }
        let rateGiven = given.contains("--rate"), sizeGiven = given.contains("--size")
        if let relay = o.relay {
            do { _ = try HTTPClient(url: relay) } catch {
                throw LoadError("--relay \(relay): \(error.message.hasPrefix(relay) ? "expected http://HOST:PORT" : error.message)")
            }
        }
        if o.turn != nil {
            guard o.turnCredential != nil else { throw LoadError("--turn: needs --turn-user NAME:PASSWORD or --turn-secret SECRET") }
            guard o.target == nil, o.upstreamListen == nil, o.legs == nil else {
                throw LoadError("--turn: not with --target/--upstream-listen/--legs (one mode per run)")
            }
            if o.tlsCA != nil && o.turnTransport != .tls { throw LoadError("--tls-ca: only with --turn-transport tls") }
            if o.turnPeers == .each {
                guard let peer = o.turnPeer else {
                    throw LoadError("--turn-peers each: needs --turn-peer HOST:PORT (an echo peer listening on every client's address)")
                }
                guard !o.bidirectional else {
                    throw LoadError("--turn-peers each: not with --bidirectional (each client's echo peer sends its datagrams back already)")
                }
                _ = try TurnPeers.each.addresses(first: SocketAddress(hostPort: peer), count: o.streams)
            }
            if o.turnPeer != nil && o.bidirectional {
                throw LoadError("--turn-peer: not with --bidirectional (the echo peer sends every datagram back already)")
            }
        } else if o.turnCredential != nil || o.turnLifetime != LoadOptions().turnLifetime || o.turnRefresh != nil {
            throw LoadError("--turn-user/--turn-secret/--turn-lifetime/--turn-refresh: only with --turn HOST:PORT")
        } else if o.turnTransport != .udp || o.tlsCA != nil || o.turnPeer != nil || o.turnPeers != .shared || o.turnSendIndications {
            throw LoadError("--turn-transport/--tls-ca/--turn-peer/--turn-peers/--turn-send-indications: only with --turn HOST:PORT")
        } else if o.legs != nil {
            guard o.relay == nil, o.target == nil else { throw LoadError("--legs: not with --relay or --target (it stands for both)") }
        } else if o.target == nil {
            guard o.relay != nil else { throw LoadError("--relay: required (or --target with --upstream-listen, --legs, or --turn)") }
            guard o.upstreamListen == nil else { throw LoadError("--upstream-listen: only with --target") }
        } else {
            guard o.upstreamListen != nil else { throw LoadError("--target: needs --upstream-listen HOST:PORT (the rule's upstream)") }
        }
        if o.forwarderStats != nil {
            guard o.relayPID != nil else { throw LoadError("--forwarder-stats: needs --relay-pid PID (the forwarder's CPU clock)") }
        }
        if o.senderGSO && o.profile != .video {
            throw LoadError("--sender-gso: only with --profile video (a frame is what leaves as one GSO send)")
        }
        if o.congestionControl != .none && o.profile != .constant {
            throw LoadError("--congestion-control: only with --profile constant (each stream is paced evenly at the rate it controls)")
        }
        if o.congestionControl != .none && o.senderGSO { throw LoadError("--congestion-control: not with --sender-gso") }
        if o.sessionFields != nil && (o.relay == nil || o.target != nil || o.legs != nil || o.turn != nil) {
            throw LoadError("--session: only in session mode (--relay without --target, --legs or --turn)")
        }
        if o.profile != .constant {
            if rateGiven { throw LoadError("--rate: only with --profile constant (\(o.profile.rawValue) fixes its own rate)") }
            if sizeGiven { throw LoadError("--size: only with --profile constant (\(o.profile.rawValue) fixes its own sizes)") }
        }
        guard o.warmup < o.seconds else { throw LoadError("--warmup \(o.warmup): must be shorter than --seconds \(o.seconds)") }
        return o
    }

    package static func list(_ name: String, _ text: String) throws(LoadError) -> [String] {
        let items = text.split(separator: ",").map(String.init)
        guard !items.isEmpty else { throw LoadError("\(name): expected a comma-separated list") }
        return items
    }

    /// One of an option's named values, or an error listing them all.
    package static func choice<Choice: RawRepresentable & CaseIterable>(_ name: String, _ text: String) throws(LoadError) -> Choice
    where Choice.RawValue == String {
        guard let value = Choice(rawValue: text) else {
            throw LoadError("\(name) \(text): accepted: \(Choice.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }

    package static func integer(_ name: String, _ text: String, _ range: ClosedRange<Int>) throws(LoadError) -> Int {
        guard let v = Int(text), range.contains(v) else {
            throw LoadError("\(name) \(text): accepted: an integer \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    package static func number(_ name: String, _ text: String, _ range: ClosedRange<Double>) throws(LoadError) -> Double {
        guard let v = Double(text), v.isFinite, range.contains(v) else {
            throw LoadError("\(name) \(text): accepted: a number \(format(range.lowerBound))...\(format(range.upperBound))")
        }
        return v
    }

    package static func address(_ name: String, _ text: String) throws(LoadError) -> String {
        do { _ = try SocketAddress(hostPort: text) } catch {
            throw LoadError("\(name) \(text): accepted: HOST:PORT or [IPv6]:PORT")
        }
        return text
    }

    private static func format(_ v: Double) -> String {
        v == v.rounded() ? String(Int(v)) : String(v)
    }
}
