import DatagramEngine
import Foundation
import Glibc
import NetAddress
import SystemSupport

// The engine benchmark: a forwarder over loopback at fixed offered rates. A source thread sends
// 200-byte datagrams at a paced rate to a forwarder, which forwards each one (with its TOS
// byte) to a sink thread. The forwarder is a child process: our engine (`engine-bench serve`)
// or its C counterpart (bench/reference/forwarder.c), the same loop in C; each Swift
// configuration runs beside its C one in the same repeat, so each backend is reported as a
// ratio to the C limit. CPU is the forwarder process's kernel CPU clock (user + system; one
// thread), read from outside at the start and end of the measured window, for both alike; syscalls
// come from each forwarder's own counter (one io_uring_enter counts one). Configurations are
// interleaved inside each repeat so machine drift falls on all.

struct Configuration {
    let name: String
    let backend: Backend
    let gso: Bool
    /// UDP GRO on receive: measured only with `--source-gso` (single datagrams never coalesce).
    var gro = false
    /// Receive timestamps (`--timestamps`): the same configuration named with "+ts". Swift only:
    /// the C reference takes none, so these run without a C counterpart.
    var timestamps = false

    static let timestampSuffix = "+ts"

    /// This configuration with receive timestamps on.
    var stamped: Configuration {
        var copy = Configuration(name: name + Self.timestampSuffix, backend: backend, gso: gso, gro: gro)
        copy.timestamps = true
        return copy
    }

    /// The configuration a name says, "+ts" included.
    static func named(_ name: String) -> Configuration? {
        if name.hasSuffix(timestampSuffix) { return named(String(name.dropLast(timestampSuffix.count)))?.stamped }
        return configurations.first { $0.name == name }
    }
}

let configurations = [
    Configuration(name: "perpacket", backend: .perPacket, gso: false),
    Configuration(name: "mmsg", backend: .mmsg, gso: false),
    Configuration(name: "mmsg+gso", backend: .mmsg, gso: true),
    Configuration(name: "uring", backend: .uring, gso: false),
    Configuration(name: "uring+gso", backend: .uring, gso: true),
    Configuration(name: "mmsg+gso+gro", backend: .mmsg, gso: true, gro: true),
    Configuration(name: "uring+gso+gro", backend: .uring, gso: true, gro: true),
]

struct Measurement {
    var delivered: Double
    var cpuMicrosecondsPerDatagram: Double
    var syscallsPerDatagram: Double
    var gsoShare: Double
}

/// The sink's count, kept only during the measured window.
final class Sink: @unchecked Sendable {
    let lock = NSLock()
    var stop = false
    var measuring = false
    var sunk: UInt64 = 0
    var address: Endpoint?

    func with<T>(_ body: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return body() }
}

/// Starts the sink thread: an mmsg engine on a loopback socket, counting while `measuring`.
/// Returns the sink, its address known, and what stops it.
func startSink(placement: Placement? = nil) -> (sink: Sink, destination: Endpoint, stop: () -> Void) {
    let sink = Sink()
    let sinkThread = Thread {
        placement?.pinSink()
        let engine = try! DatagramEngine(configuration: EngineConfiguration(backend: .mmsg))
        let socket = try! UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!)
        _ = try! engine.register(socket)
        sink.with { sink.address = socket.localEndpoint }
        while !sink.with({ sink.stop }) {
            let count = engine.receive(timeoutMilliseconds: 20)
            if count > 0 { sink.with { if sink.measuring { sink.sunk += UInt64(count) } } }
        }
    }
    sinkThread.start()
    while sink.with({ sink.address == nil }) { usleep(1000) }
    return (sink, sink.with { sink.address! }, {
        sink.with { sink.stop = true }
        while sinkThread.isExecuting { usleep(1000) }
    })
}

func run(_ configuration: Configuration, reference: String?, rate: Int, options: BenchOptions, placement: Placement?) throws -> Measurement {
    let (sink, destination, stopSink) = startSink(placement: placement)
    defer { stopSink() }

    let forwarder = try ForwarderProcess(command: reference.map { [$0] } ?? ourServeCommand, backend: configuration.name, destination: destination)
    if let placement { placement.pinForwarder(forwarder.process.processIdentifier) }
    defer { forwarder.stop() }
    let target = forwarder.target

    // The source: bursts every millisecond at absolute deadlines, so the offered rate holds; with
    // --source-gso each burst leaves as GSO sends (up to 64 datagrams each), as a video sender's
    // frames would, so that the forwarder's GRO has whole bursts to take in.
    let source = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: options.sourceGSO))
    let sender = try source.register(UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!))
    let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: options.size, alignment: 8)
    defer { payload.deallocate() }
    payload.initializeMemory(as: UInt8.self, repeating: 0x5A)
    let tick: UInt64 = 1_000_000  // ns
    let warmup = 0.3
    let start = MonotonicClock.now()
    var next = start
    var sent = 0
    var offered = 0
    var elapsed = 0.0
    var before: (cpu: Double, counters: (forwarded: UInt64, syscalls: UInt64, gso: UInt64))?
    while elapsed < warmup + options.seconds {
        if before == nil && elapsed >= warmup {
            before = (forwarder.cpuSeconds(), forwarder.counters())
            sink.with { sink.measuring = true }
            offered = 0
        }
        let due = Int((elapsed + 0.001) * Double(rate)) - sent
        for _ in 0..<max(0, due) {
            source.enqueue(socket: sender, to: target, trafficClass: TrafficClass(dscp: 46, ecn: .ect1), bytes: UnsafeRawBufferPointer(payload))
        }
        source.flush()
        sent += max(0, due)
        offered += max(0, due)
        next += tick
        MonotonicClock.sleep(until: next)
        elapsed = Double(MonotonicClock.now() - start) / 1e9
    }
    usleep(100_000)  // let the last bursts through
    let cpu = forwarder.cpuSeconds() - before!.cpu
    let after = forwarder.counters()
    let sunk = sink.with { sink.measuring = false; return sink.sunk }
    let forwarded = Double(max(after.forwarded - before!.counters.forwarded, 1))
    return Measurement(delivered: Double(sunk) / Double(max(offered, 1)),
                       cpuMicrosecondsPerDatagram: cpu * 1e6 / forwarded,
                       syscallsPerDatagram: Double(after.syscalls - before!.counters.syscalls) / forwarded,
                       gsoShare: Double(after.gso - before!.counters.gso) / forwarded)
}

/// Our forwarder as a process: this program's `serve`.
let ourServeCommand = [Bundle.main.executablePath ?? CommandLine.arguments[0], "serve"]

if CommandLine.arguments.dropFirst().first == "serve" { Serve.run(Array(CommandLine.arguments.dropFirst(2))) }
let options = BenchOptions.parse(Array(CommandLine.arguments.dropFirst()))
if let count = options.count {
    try FixedCount.run(options, count: count)
    exit(0)
}
if options.reference == nil {
    FileHandle.standardError.write(Data("engine-bench: no C reference (make reference builds .build/reference/forwarder); Swift only, no ratios\n".utf8))
}
let names = options.only.split(separator: ",").map(String.init)
if let unknown = names.first(where: { name in !configurations.contains { $0.name == name } }) {
    fail("--only \(unknown): one of \(configurations.map(\.name).joined(separator: ", ")) (--timestamps adds +ts)")
}
// The source is this thread: pinned before any forwarder or sink is started.
let placement = options.pin ? Placement.split() : nil
placement?.pinSource()
if options.pin && placement == nil {
    FileHandle.standardError.write(Data("engine-bench: fewer than two CPUs allowed (or more than 64): placement left to the scheduler\n".utf8))
}
let measured = configurations.filter { (options.sourceGSO || !$0.gro) && (names.isEmpty || names.contains($0.name)) }.flatMap { configuration in
    switch options.timestamps {
    case .off: [configuration]
    case .on: [configuration.stamped]
    // Side by side in every repeat, which goes first alternating by repeat as Swift and C do.
    case .both: [configuration, configuration.stamped]
    }
}
var results: [String: [Measurement]] = [:]
for repeatIndex in 1...options.repeats {
    for rate in options.rates {
        for configuration in repeatIndex % 2 == 0 && options.timestamps == .both ? alternated(measured) : measured {
            // Swift and C side by side, which goes first alternating by repeat. The C lines name
            // the engine "C:NAME", one word, so scripts that read these lines (compare-commits)
            // still find the rate and CPU in the same columns.
            var sides: [String?] = [nil] + (configuration.timestamps ? [] : options.reference.map { [$0] } ?? [])
            if repeatIndex % 2 == 0 { sides.reverse() }
            for reference in sides {
                let measurement = try run(configuration, reference: reference, rate: rate, options: options, placement: placement)
                let key = "\(reference == nil ? "swift" : "c") \(configuration.name)@\(rate)"
                results[key, default: []].append(measurement)
                let label = (reference == nil ? "" : "C:") + configuration.name
                let name = label.padding(toLength: max(15, label.count), withPad: " ", startingAt: 0)
                FileHandle.standardError.write(Data(String(format: "repeat %d  %@ %7d/s  %.2f us/datagram  %.3f syscalls/datagram  delivered %.1f%%\n",
                                                           repeatIndex, name as NSString, rate,
                                                           measurement.cpuMicrosecondsPerDatagram, measurement.syscallsPerDatagram,
                                                           measurement.delivered * 100).utf8))
            }
        }
    }
}

/// Each configuration's plain and "+ts" runs in the other order, so neither always runs second.
func alternated(_ measured: [Configuration]) -> [Configuration] {
    stride(from: 0, to: measured.count, by: 2).flatMap { [measured[$0 + 1], measured[$0]] }
}

let table = BenchTable.render(results, rates: options.rates, names: measured.map(\.name), withReference: options.reference != nil)
print(table, terminator: "")
if let output = options.output {
    try table.write(toFile: output, atomically: true, encoding: .utf8)
}
