import ClientSockets
import Foundation
import RelayObservation
import STUN
import TurnClientKit

/// Parses the options of one load run (mediarelay-load without `compare`); nil for `--help`.
/// Every error is one line naming the option and the accepted values, in the same form as the
/// relay's own: `--OPTION VALUE: what is accepted`. The helpers below read a value for
/// `compare`'s parser too.
public enum RunOptionParser {
    public static func parse(_ arguments: [String]) throws(LoadError) -> LoadOptions? {
        var o = LoadOptions()
        var rateGiven = false, sizeGiven = false
        var cursor = ArgumentCursor(arguments)
        func value(_ name: String) throws(LoadError) -> String { try cursor.value(for: name) }
        while let name = cursor.next() {
            switch name {
            case "--help", "-h": return nil
            case "--relay": o.relay = try value(name)
            case "--token":
                let t = try value(name)
                guard !t.isEmpty else { throw LoadError("--token: must not be empty") }
                o.token = t
            case "--streams": o.streams = try integer(name, try value(name), 1...10000)
            case "--rate": o.rate = try number(name, try value(name), 1...10_000_000); rateGiven = true
            case "--size": o.size = try integer(name, try value(name), PayloadHeader.size...9000); sizeGiven = true
            case "--seconds": o.seconds = try number(name, try value(name), 0.1...3600)
            case "--profile": o.profile = try choice(name, try value(name))
            case "--tos": o.tos = UInt8(try integer(name, try value(name), 0...255))
            case "--bitrate": o.bitrate = try integer(name, try value(name), 8000...1_000_000_000)
            case "--bidirectional": o.bidirectional = true
            case "--sender-gso": o.senderGSO = true
            case "--json": o.json = true
            case "--target": o.target = try address(name, try value(name))
            case "--upstream-listen": o.upstreamListen = try address(name, try value(name))
            case "--legs":
                o.legs = try value(name)
                guard o.legs?.isEmpty == false else { throw LoadError("--legs: must not be empty") }
            case "--forwarder-stats":
                o.forwarderStats = try value(name)
                guard o.forwarderStats?.isEmpty == false else { throw LoadError("--forwarder-stats: must not be empty") }
            case "--warmup": o.warmup = try number(name, try value(name), 0...60)
            case "--relay-pid": o.relayPID = Int32(try integer(name, try value(name), 1...Int(Int32.max)))
            case "--no-progress": o.progress = false
            case "--congestion-control": o.congestionControl = try choice(name, try value(name))
            case "--session":
                let v = try value(name)
                guard let object = (try? JSONSerialization.jsonObject(with: Data(v.utf8))) as? [String: Any] else {
                    throw LoadError("--session \(v): expected a JSON object of session fields, e.g. {\"max_packets_per_second\": 2000}")
                }
                guard object["legs"] == nil else { throw LoadError("--session: \"legs\" is the generator's (2 per session)") }
                o.sessionFields = v
            case "--turn": o.turn = try address(name, try value(name))
            case "--turn-lifetime": o.turnLifetime = UInt32(try integer(name, try value(name), 1...3600))
            case "--turn-refresh": o.turnRefresh = try number(name, try value(name), 0.5...3000)
            case "--turn-transport":
                let text = try value(name)
                guard let transport = TurnTransport(name: text) else {
                    throw LoadError("\(name) \(text): accepted: \(TurnTransport.allCases.map(\.name).joined(separator: ", "))")
                }
                o.turnTransport = transport
            case "--tls-ca":
                o.tlsCA = try value(name)
                guard o.tlsCA?.isEmpty == false else { throw LoadError("--tls-ca: must not be empty") }
            case "--turn-peer": o.turnPeer = try address(name, try value(name))
            case "--turn-peers": o.turnPeers = try choice(name, try value(name))
            case "--turn-send-indications": o.turnSendIndications = true
            case "--drain": o.drain = try number(name, try value(name), 0...60)
            case "--turn-user":
                let v = try value(name)
                guard o.turnCredential == nil else { throw LoadError("--turn-user: give one credential, --turn-user or --turn-secret") }
                guard let credential = TurnCredential(userPassword: v) else { throw LoadError("--turn-user \(v): accepted: NAME:PASSWORD") }
                o.turnCredential = credential
            case "--turn-secret":
                let v = try value(name)
                guard o.turnCredential == nil else { throw LoadError("--turn-secret: give one credential, --turn-user or --turn-secret") }
                guard !v.isEmpty else { throw LoadError("--turn-secret: must not be empty") }
                o.turnCredential = .secret(v)
            default: throw LoadError("\(name): unknown option (see --help)")
            }
        }
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

/// Walks a command line: each option, and the value that follows it when it takes one.
package struct ArgumentCursor {
    private let arguments: [String]
    private var index = -1

    package init(_ arguments: [String]) { self.arguments = arguments }

    /// The next option, or nil at the end.
    package mutating func next() -> String? {
        index += 1
        return index < arguments.count ? arguments[index] : nil
    }

    /// The value after the current option.
    package mutating func value(for name: String) throws(LoadError) -> String {
        guard index + 1 < arguments.count else { throw LoadError("\(name): needs a value") }
        index += 1
        return arguments[index]
    }
}
