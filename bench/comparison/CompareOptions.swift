import ClientSockets
import LoadGen

/// The settings of `mediarelay-load compare`.
public struct CompareOptions: Sendable, Equatable {
    public var server = ""
    public var out = "bench/results/latest"
    /// Interleaved rounds at least (`--repeats`) and at most (`--max-repeats`): after the
    /// minimum, only the loads whose checks are not settled run again (`StoppingRule`).
    public var repeats = 3
    public var maxRepeats = 3
    /// No round past the minimum starts that would end after this many seconds of the
    /// comparison (`--budget`), whatever is still unsettled: a bound on the whole run's length.
    public var budget: Double?
    /// Each run's length; make demo's choice is in bench/demo.sh and bench/README.md.
    public var seconds = 1.5
    public var quick = false
    /// Only the CPU cross-check: one heavier run per engine, /proc/PID/stat against /v1/stats.
    public var check = false
    /// The C reference forwarder; when given, it runs beside the relay's engines as `c-perpacket`,
    /// or as the counterpart of each relay engine (`references`).
    public var reference: String?
    public var references = ReferenceSet.perpacket
    /// Loads and engines by name (nil: all), and the relay's worker counts to run each engine with.
    public var loads: [String]?
    public var engines: [String]?
    public var workers = [1]
    /// The address the relay (or the C forwarder) binds and answers on, 127.0.0.1 by default;
    /// another one with `serverPrefix` puts it behind a veth pair in its own network namespace.
    public var relayHost = "127.0.0.1"
    /// A command the servers are started under, e.g. `ip netns exec NAME`.
    public var serverPrefix: [String] = []
    /// Where the relay (or C forwarder) and the generator's threads run (`--pin`).
    public var pin = Pinning.off
    public init() {}
}

/// `compare --pin`: placement left to the scheduler, `CPUPlacement.split()`, or
/// `CPUPlacement.alone()` (the relay alone on its CPU).
public enum Pinning: String, CaseIterable, Sendable {
    case off
    case split
    case relay
}

extension CompareOptions {
    public var stoppingRule: StoppingRule { StoppingRule(minimum: repeats, maximum: maxRepeats) }
}

/// What mediarelay-load's command line asks for.
public enum LoadCommand: Sendable, Equatable {
    case help
    case run(LoadOptions)
    case compare(CompareOptions)
}

/// Parses mediarelay-load's command line: `compare` and its options, or one load run's
/// (`RunOptionParser`).
public enum OptionParser {
    public static func parse(_ arguments: [String]) throws(LoadError) -> LoadCommand {
        if arguments.first == "compare" {
            return try CompareOptionParser.parse(Array(arguments.dropFirst())).map(LoadCommand.compare) ?? .help
        }
        return try RunOptionParser.parse(arguments).map(LoadCommand.run) ?? .help
    }
}

/// Parses `mediarelay-load compare`'s options with its table, then checks the rules across them.
public enum CompareOptionParser {
    /// nil for `--help`.
    public static func parse(_ arguments: [String]) throws(LoadError) -> CompareOptions? {
        var o = CompareOptions()
        guard let given = try table.parse(arguments, into: &o, prefix: "compare ") else { return nil }
        let serverGiven = given.contains("--server"), repeatsGiven = given.contains("--repeats")
        let secondsGiven = given.contains("--seconds"), referencesGiven = given.contains("--references")
        guard serverGiven, !o.server.isEmpty else { throw LoadError("compare --server: required (path to the mediarelay executable)") }
        if o.pin != .off && o.workers != [1] {
            throw LoadError("compare --pin \(o.pin.rawValue): only with --workers 1 (every thread of the relay goes on one CPU)")
        }
        if o.reference == nil {
            if referencesGiven { throw LoadError("compare --references: only with --reference PATH (the C forwarder, built by make reference)") }
            if let c = o.engines?.first(where: { name in EngineSetting.references.contains { $0.name == name } }) {
                throw LoadError("compare --engines \(c): needs --reference PATH (the C forwarder, built by make reference)")
            }
        }
        if o.quick {
            if !repeatsGiven { o.repeats = 1 }
            if !secondsGiven { o.seconds = 1 }
        }
        // Without --max-repeats, --repeats rounds of everything, as before the stopping rule.
        if !given.contains("--max-repeats") {
            o.maxRepeats = o.repeats
        } else if o.maxRepeats < o.repeats {
            throw LoadError("compare --max-repeats \(o.maxRepeats): at least --repeats (\(o.repeats))")
        }
        return o
    }
}

extension CompareOptionParser {
    /// Every option of `compare`.
    static let table = OptionTable<CompareOptions>([
        OptionRow("--server") { o, v in o.server = v },
        OptionRow("--out") { o, v throws(LoadError) in o.out = try RunOptionParser.nonEmpty("--out", v) },
        OptionRow("--repeats") { o, v throws(LoadError) in o.repeats = try RunOptionParser.integer("--repeats", v, 1...20) },
        OptionRow("--max-repeats") { o, v throws(LoadError) in o.maxRepeats = try RunOptionParser.integer("--max-repeats", v, 1...40) },
        OptionRow("--budget") { o, v throws(LoadError) in o.budget = try RunOptionParser.number("--budget", v, 1...86_400) },
        OptionRow("--seconds") { o, v throws(LoadError) in o.seconds = try RunOptionParser.number("--seconds", v, 0.5...60) },
        OptionRow(switch: "--quick") { $0.quick = true },
        OptionRow(switch: "--check") { $0.check = true },
        OptionRow("--reference") { o, v in o.reference = v },
        OptionRow("--references") { o, v throws(LoadError) in o.references = try RunOptionParser.choice("compare --references", v) },
        OptionRow("--loads") { o, v throws(LoadError) in
            let labels = try RunOptionParser.list("--loads", v)
            for label in labels where LoadPoint.named(label) == nil {
                throw LoadError("compare --loads \(label): accepted: \(LoadPoint.standard.map(\.label).joined(separator: ", ")), "
                                + "NNNk (1...2000 thousand datagrams/s, 20 streams), NNNkxS (S streams, 1...10000), voiceN, videoN (N 1...10000)")
            }
            o.loads = labels
        },
        OptionRow("--engines") { o, v throws(LoadError) in
            let names = try RunOptionParser.list("--engines", v)
            let known = (EngineSetting.all + EngineSetting.videoGRO + EngineSetting.references).map(\.name)
            for engine in names where !known.contains(engine) {
                throw LoadError("compare --engines \(engine): accepted: \(known.joined(separator: ", "))")
            }
            o.engines = names
        },
        OptionRow("--workers") { o, v throws(LoadError) in
            o.workers = try RunOptionParser.list("--workers", v).map { text throws(LoadError) in try RunOptionParser.integer("--workers", text, 1...64) }
        },
        OptionRow("--relay-host") { o, v throws(LoadError) in
            _ = try RunOptionParser.address("--relay-host", "\(v):0")
            o.relayHost = v
        },
        OptionRow("--server-prefix") { o, v in o.serverPrefix = v.split(separator: " ").map(String.init) },
        OptionRow("--pin") { o, v throws(LoadError) in o.pin = try RunOptionParser.choice("compare --pin", v) },
    ])
}
