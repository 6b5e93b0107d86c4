import Foundation
import Glibc

/// engine-bench's command line.
struct BenchOptions {
    static let defaultReference = ".build/reference/forwarder"
    var rates = [50_000, 200_000]
    var seconds = 2.0
    var repeats = 3
    var size = 200
    var output: String?
    /// `--only NAME[,NAME...]`: measure only these configurations.
    /// `--count N` (FixedCount): forward exactly N datagrams through one forwarder, `--only`
    /// NAME (one), `--side` swift, c or exe, under `--wrap` (a command line split at spaces), in bursts.
    var count: Int?
    var only = ""
    var side = "swift"
    var wrap: [String] = []
    var burst = 16
    /// The source sends each millisecond's datagrams as GSO sends, and the +gro configurations
    /// run too (on loopback a GSO send reaches a GRO socket whole: see bench/README.md).
    var sourceGSO = false
    /// `--pin split` (the default): the source on one CPU, the forwarder and the sink on
    /// another; `--pin alone`: the forwarder alone on one CPU, the source and the sink on
    /// another, for throughput (Placement); `--pin off` leaves placement to the scheduler.
    enum Pin: String { case split, alone, off }
    var pin = Pin.split
    /// `--timestamps off|on|both`: our forwarder without receive timestamps (the default), with
    /// them (configurations named "+ts"), or both side by side in every repeat, with a table of
    /// what they cost (Swift only; the C reference takes none).
    enum Timestamps: String { case off, on, both }
    var timestamps = Timestamps.off
    /// The C reference forwarder; by default .build/reference/forwarder when it was built.
    var reference: String? = access(BenchOptions.defaultReference, X_OK) == 0 ? BenchOptions.defaultReference : nil
    static let defaultExecutable = ".build/release/mediarelay"
    /// The relay executable, measured beside the harness with a forward rule (RelayForwarder); by
    /// default .build/release/mediarelay when it was built.
    var executable: String? = access(BenchOptions.defaultExecutable, X_OK) == 0 ? BenchOptions.defaultExecutable : nil

    /// `--listen-address 0.0.0.0`: the executable's forward rule listens on a wildcard address
    /// (the source still sends to 127.0.0.1), to measure what a wildcard listener costs.
    var listenAddress = "127.0.0.1"

    static func parse(_ arguments: [String]) -> BenchOptions {
        var options = BenchOptions()
        var index = 0
        func value() -> String {
            index += 1
            guard index < arguments.count else { fail("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--rates": options.rates = value().split(separator: ",").map { number(String($0), "--rates") }
            case "--seconds":
                guard let seconds = Double(value()) else { fail("--seconds: expected a number") }
                options.seconds = seconds
            case "--repeats": options.repeats = number(value(), "--repeats")
            case "--size": options.size = number(value(), "--size")
            case "--out": options.output = value()
            case "--c-forwarder": options.reference = program(value(), "--c-forwarder", cure: "make reference builds it")
            case "--executable": options.executable = program(value(), "--executable", cure: "swift build -c release builds it")
            case "--count": options.count = number(value(), "--count")
            case "--only": options.only = value()
            case "--side":
                options.side = value()
                guard ["swift", "c", "exe"].contains(options.side) else { fail("--side: swift, c or exe") }
            case "--wrap": options.wrap = value().split(separator: " ").map(String.init)
            case "--burst": options.burst = number(value(), "--burst")
            case "--source-gso": options.sourceGSO = true
            case "--listen-address":
                options.listenAddress = value()
                guard ["127.0.0.1", "0.0.0.0"].contains(options.listenAddress) else { fail("--listen-address: 127.0.0.1 or 0.0.0.0") }
            case "--timestamps":
                guard let choice = Timestamps(rawValue: value()) else { fail("--timestamps: off, on or both") }
                options.timestamps = choice
            case "--pin":
                guard let choice = Pin(rawValue: value()) else { fail("--pin: split, alone or off") }
                options.pin = choice
            case "--help":
                print("engine-bench [--rates 50000,200000] [--seconds 2] [--repeats 3] [--size 200] [--out FILE.md] [--c-forwarder PATH|none] [--executable PATH|none] [--source-gso] [--only NAME,...] [--pin split|alone|off] [--timestamps off|on|both] [--listen-address 127.0.0.1|0.0.0.0]")
                print("  --pin split (the default): source alone on one CPU, forwarder and sink on the other (CPU per datagram); alone: forwarder alone on one CPU,")
                print("    source and sink on the other (throughput: nothing else on the forwarder's CPU; bench/throughput.sh); off: the scheduler's")
                print("  Per-run lines (stderr) end with the load's figures: sent/s, socket drops at the forwarder and the sink, forwarder and generator")
                print("    CPU, how busy each pinned CPU was, and limit none|source|sink|forwarder|forwarder+sink|unexplained (none: >= 99.9% delivered)")
                print("engine-bench --count N --only NAME [--side swift|c|exe] [--wrap 'CMD ARGS'] [--burst 16] [--rates RATE]")
                print("engine-bench serve --backend NAME --listen 127.0.0.1:PORT --to HOST:PORT [--stats FILE]")
                exit(0)
            default: fail("unknown option \(arguments[index])")
            }
            index += 1
        }
        guard options.repeats >= 1, options.seconds > 0, (1...1472).contains(options.size),
              options.rates.allSatisfy({ (1...20_000_000).contains($0) }),
              options.count.map({ $0 >= 1 }) ?? true, (1...1024).contains(options.burst) else { fail("values out of range") }
        return options
    }
}

/// A program to run, or nil for "none".
func program(_ path: String, _ option: String, cure: String) -> String? {
    guard path != "none" else { return nil }
    guard access(path, X_OK) == 0 else { fail("\(option) \(path): not an executable (\(cure))") }
    return path
}

func number(_ text: String, _ option: String) -> Int {
    guard let value = Int(text) else { fail("\(option) \(text): expected an integer") }
    return value
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("engine-bench: \(message)\n".utf8))
    exit(2)
}
