import ClientSockets
import JSONSyntax
import OptionTokens
import STUN
import TurnClientKit

/// One option of mediarelay-load: its flag, whether it takes a value, and what it does to the
/// settings it fills (a load run's `LoadOptions`, or `compare`'s). One table per command feeds
/// the tokenizer (which flags exist, which take a value) and the parser (what a value means),
/// as the relay's `OptionKey` does; rules across options are checked after the whole line.
package struct OptionRow<Settings>: Sendable {
    package let flag: String
    package let takesValue: Bool
    package let apply: @Sendable (inout Settings, String) throws(LoadError) -> Void

    /// An option with a value.
    package init(_ flag: String, _ apply: @escaping @Sendable (inout Settings, String) throws(LoadError) -> Void) {
        self.flag = flag
        takesValue = true
        self.apply = apply
    }

    /// A switch: present or not.
    package init(switch flag: String, _ apply: @escaping @Sendable (inout Settings) -> Void) {
        self.flag = flag
        takesValue = false
        self.apply = { settings, _ in apply(&settings) }
    }
}

/// A command's table, and the one loop that reads a command line with it.
package struct OptionTable<Settings>: Sendable {
    package let rows: [OptionRow<Settings>]
    private let byFlag: [String: Int]

    package init(_ rows: [OptionRow<Settings>]) {
        self.rows = rows
        byFlag = Dictionary(uniqueKeysWithValues: rows.enumerated().map { ($1.flag, $0) })
    }

    /// Applies `arguments` to `settings` in order; returns the flags given, or nil for `--help`
    /// (`-h`) anywhere. `prefix` leads every error (`compare ` for compare's options).
    package func parse(_ arguments: [String], into settings: inout Settings, prefix: String = "") throws(LoadError) -> Set<String>? {
        if arguments.contains("--help") || arguments.contains("-h") { return nil }
        let tokens: [OptionToken]
        do throws(OptionTokenError) {
            tokens = try OptionTokenizer.tokens(arguments) { byFlag[$0].map { rows[$0].takesValue } }
        } catch {
            switch error {
            case .unexpectedArgument(let text), .unknownOption(let text): throw LoadError("\(prefix)\(text): unknown option (see --help)")
            case .missingValue(let flag): throw LoadError("\(flag): needs a value")
            case .valueNotTaken(let flag): throw LoadError("\(flag): takes no value")
            }
        }
        var given = Set<String>()
        for token in tokens {
            try rows[byFlag[token.flag]!].apply(&settings, token.value ?? "")
            given.insert(token.flag)
        }
        return given
    }
}

extension RunOptionParser {
    /// Every option of a load run.
    static let table = OptionTable<LoadOptions>([
        OptionRow("--relay") { o, v in o.relay = v },
        OptionRow("--token") { o, v throws(LoadError) in o.token = try nonEmpty("--token", v) },
        OptionRow("--streams") { o, v throws(LoadError) in o.streams = try integer("--streams", v, 1...10000) },
        OptionRow("--rate") { o, v throws(LoadError) in o.rate = try number("--rate", v, 1...10_000_000) },
        OptionRow("--size") { o, v throws(LoadError) in o.size = try integer("--size", v, PayloadHeader.size...9000) },
        OptionRow("--seconds") { o, v throws(LoadError) in o.seconds = try number("--seconds", v, 0.1...3600) },
        OptionRow("--profile") { o, v throws(LoadError) in o.profile = try choice("--profile", v) },
        OptionRow("--tos") { o, v throws(LoadError) in o.tos = UInt8(try integer("--tos", v, 0...255)) },
        OptionRow("--bitrate") { o, v throws(LoadError) in o.bitrate = try integer("--bitrate", v, 8000...1_000_000_000) },
        OptionRow(switch: "--bidirectional") { $0.bidirectional = true },
        OptionRow(switch: "--sender-gso") { $0.senderGSO = true },
        OptionRow(switch: "--json") { $0.json = true },
        OptionRow("--target") { o, v throws(LoadError) in o.target = try address("--target", v) },
        OptionRow("--upstream-listen") { o, v throws(LoadError) in o.upstreamListen = try address("--upstream-listen", v) },
        OptionRow("--legs") { o, v throws(LoadError) in o.legs = try nonEmpty("--legs", v) },
        OptionRow("--forwarder-stats") { o, v throws(LoadError) in o.forwarderStats = try nonEmpty("--forwarder-stats", v) },
        OptionRow("--warmup") { o, v throws(LoadError) in o.warmup = try number("--warmup", v, 0...60) },
        OptionRow("--relay-pid") { o, v throws(LoadError) in o.relayPID = Int32(try integer("--relay-pid", v, 1...Int(Int32.max))) },
        OptionRow(switch: "--no-progress") { $0.progress = false },
        OptionRow("--congestion-control") { o, v throws(LoadError) in o.congestionControl = try choice("--congestion-control", v) },
        OptionRow("--session") { o, v throws(LoadError) in
            guard let object = try? JSONValue(parsing: Array(v.utf8)), object.members != nil else {
                throw LoadError("--session \(v): expected a JSON object of session fields, e.g. {\"max_packets_per_second\": 2000}")
            }
            guard object["legs"] == nil else { throw LoadError("--session: \"legs\" is the generator's (2 per session)") }
            o.sessionFields = v
        },
        OptionRow("--turn") { o, v throws(LoadError) in o.turn = try address("--turn", v) },
        OptionRow("--turn-lifetime") { o, v throws(LoadError) in o.turnLifetime = UInt32(try integer("--turn-lifetime", v, 1...3600)) },
        OptionRow("--turn-refresh") { o, v throws(LoadError) in o.turnRefresh = try number("--turn-refresh", v, 0.5...3000) },
        OptionRow("--turn-transport") { o, v throws(LoadError) in
            guard let transport = TurnTransport(name: v) else {
                throw LoadError("--turn-transport \(v): accepted: \(TurnTransport.allCases.map(\.name).joined(separator: ", "))")
            }
            o.turnTransport = transport
        },
        OptionRow("--tls-ca") { o, v throws(LoadError) in o.tlsCA = try nonEmpty("--tls-ca", v) },
        OptionRow("--turn-peer") { o, v throws(LoadError) in o.turnPeer = try address("--turn-peer", v) },
        OptionRow("--turn-peers") { o, v throws(LoadError) in o.turnPeers = try choice("--turn-peers", v) },
        OptionRow(switch: "--turn-send-indications") { $0.turnSendIndications = true },
        OptionRow("--drain") { o, v throws(LoadError) in o.drain = try number("--drain", v, 0...60) },
        OptionRow("--turn-user") { o, v throws(LoadError) in
            guard o.turnCredential == nil else { throw LoadError("--turn-user: give one credential, --turn-user or --turn-secret") }
            guard let credential = TurnCredential(userPassword: v) else { throw LoadError("--turn-user \(v): accepted: NAME:PASSWORD") }
            o.turnCredential = credential
        },
        OptionRow("--turn-secret") { o, v throws(LoadError) in
            guard o.turnCredential == nil else { throw LoadError("--turn-secret: give one credential, --turn-user or --turn-secret") }
            o.turnCredential = .secret(try nonEmpty("--turn-secret", v))
        },
    ])

    /// `text`, refused when empty.
    package static func nonEmpty(_ name: String, _ text: String) throws(LoadError) -> String {
        guard !text.isEmpty else { throw LoadError("\(name): must not be empty") }
        return text
    }
}
