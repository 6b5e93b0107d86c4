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
// interleaved inside each repeat so machine drift falls on all. With `--executable`, the relay
// itself (`mediarelay`, one worker, a forward rule) runs as a third side in every repeat,
// measured the same way plus its worker thread alone (RelayForwarder), in a table of its own.
// Every per-run line ends with the load's side of the run, the same for every forwarder
// (LoadReading): what the source sent, where the kernel dropped, the forwarder's and the
// generator's CPU, and what limited the run (`Limit`), which bench/throughput.sh reads.

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

/// Who forwards in a run: our engine as `engine-bench serve` (the harness), the C reference, or
/// the relay executable with a forward rule.
enum Side {
    case harness
    case reference(String)
    /// The relay at this path, its forward rule listening on `listen` (an address).
    case executable(String, listen: String)

    /// The side's name in the results and in `--side`.
    var key: String {
        switch self {
        case .harness: "swift"
        case .reference: "c"
        case .executable: "exe"
        }
    }

    /// Before the configuration's name in the per-repeat lines: "C:mmsg", "exe:mmsg", one word,
    /// so scripts that read these lines (compare-commits, pool-ratios) still find the rate and
    /// CPU in the same columns.
    var prefix: String {
        switch self {
        case .harness: ""
        case .reference: "C:"
        case .executable: "exe:"
        }
    }

    /// Starts this side's forwarder for `configuration`, under `wrap` (valgrind, strace) if given.
    func start(_ configuration: Configuration, destination: Endpoint, wrap: [String] = []) throws -> any ForwarderUnderTest {
        switch self {
        case .harness:
            try ForwarderProcess(command: wrapped(ourServeCommand, in: wrap), backend: configuration.name, destination: destination)
        case .reference(let path):
            try ForwarderProcess(command: wrapped([path], in: wrap), backend: configuration.name, destination: destination)
        case .executable(let path, let listen):
            try RelayForwarder(command: wrapped([path], in: wrap), wrapped: !wrap.isEmpty, configuration: configuration,
                             destination: destination, listen: listen)
        }
    }
}

/// The sink's count, kept only during the measured window.
final class Sink: @unchecked Sendable {
    let lock = NSLock()
    var stop = false
    var measuring = false
    var sunk: UInt64 = 0
    var address: Endpoint?
    /// The sink thread's CPU clock, for the generator's share of its CPU (LoadReading).
    var cpuClock = clockid_t()

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
        var clock = clockid_t()
        _ = pthread_getcpuclockid(pthread_self(), &clock)
        sink.with { sink.address = socket.localEndpoint; sink.cpuClock = clock }
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

func run(_ configuration: Configuration, side: Side, rate: Int, options: BenchOptions, placement: Placement?) throws -> Measurement {
    let (sink, destination, stopSink) = startSink(placement: placement)
    defer { stopSink() }

    let forwarder = try side.start(configuration, destination: destination)
    if let placement { forwarder.pin(placement) }
    defer { forwarder.stop() }
    let target = forwarder.target

    // The source: bursts every millisecond at absolute deadlines, so the offered rate holds; with
    // --source-gso each burst leaves as GSO sends (up to 64 datagrams each), as a video sender's
    // frames would, so that the forwarder's GRO has whole bursts to take in. A source that fell
    // behind sends at most two bursts' worth a tick while it catches up: one burst of everything
    // owed would overflow the forwarder's socket and be counted against it, and a source that
    // cannot keep up at all would owe more with every burst (and never reach the window); it
    // sends less instead, and its figures (LoadFigures.sentPerSecond) say so.
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
    let catchUp = 2 * max(1, (rate + 999) / 1000)
    var before: ForwarderReading?
    var loadBefore: LoadReading?
    var dropsBefore: [UInt64] = []
    while elapsed < warmup + options.seconds {
        if before == nil && elapsed >= warmup {
            before = try forwarder.read()
            loadBefore = LoadReading(source: source, sink: sink, forwarder: before!, placement: placement)
            dropsBefore = KernelCounters.udpDrops(ports: [target.port, destination.port])
            sink.with { sink.measuring = true }
            offered = 0
        }
        let due = min(Int((elapsed + 0.001) * Double(rate)) - sent, catchUp)
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
    guard let before, let loadBefore else { throw BenchError("the source never reached the measured window") }
    let loadAfter = LoadReading(source: source, sink: sink, forwarder: try forwarder.read(), placement: placement)
    usleep(100_000)  // let the last bursts through
    let after = try forwarder.read()
    let dropsAfter = KernelCounters.udpDrops(ports: [target.port, destination.port])
    let drops = (forwarder: dropsAfter[0] - dropsBefore[0], sink: dropsAfter[1] - dropsBefore[1])
    let sunk = Double(max(sink.with { sink.measuring = false; return sink.sunk }, UInt64(1)))
    let cpu = after.cpuSeconds - before.cpuSeconds
    // The window's own counters where the forwarder has them; else (the relay executable) the
    // ratios over its whole run, read now that the window is over, and the sink's count.
    let forwarded: Double
    let counted: (syscalls: Double, gso: Double, forwarded: Double)
    if let start = before.counters, let end = after.counters {
        forwarded = Double(max(end.forwarded - start.forwarded, 1))
        counted = (Double(end.syscalls - start.syscalls), Double(end.gso - start.gso), forwarded)
    } else {
        forwarded = sunk
        let total = try forwarder.lifetimeCounters()
        counted = (Double(total.syscalls), Double(total.gso), Double(max(total.forwarded, 1)))
    }
    let worker = after.workerCPUSeconds.flatMap { end in before.workerCPUSeconds.map { (end - $0) * 1e6 / sunk } }
    return Measurement(delivered: sunk / Double(max(offered, 1)),
                       cpuMicrosecondsPerDatagram: cpu * 1e6 / forwarded,
                       cpuMicrosecondsPerDelivered: cpu * 1e6 / sunk,
                       workerMicrosecondsPerDelivered: worker,
                       syscallsPerDatagram: counted.syscalls / counted.forwarded,
                       gsoShare: counted.gso / counted.forwarded,
                       load: loadAfter.figures(since: loadBefore, drops: drops))
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
let placement: Placement? = switch options.pin {
case .split: Placement.split()
case .alone: Placement.alone()
case .off: nil
}
placement?.pinSource()
if options.pin != .off && placement == nil {
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
let sides: [Side] = [.harness] + (options.reference.map { [.reference($0)] } ?? []) + (options.executable.map { [.executable($0, listen: options.listenAddress)] } ?? [])
for repeatIndex in 1...options.repeats {
    for rate in options.rates {
        for configuration in repeatIndex % 2 == 0 && options.timestamps == .both ? alternated(measured) : measured {
            // Every side in the same repeat; which goes first turns with the repeat (with two
            // sides, alternating). A "+ts" configuration is the harness's alone: C and the
            // executable take no receive timestamps.
            let present = configuration.timestamps ? [Side.harness] : sides
            let first = (repeatIndex - 1) % present.count
            for side in present[first...] + present[..<first] {
                let measurement = try run(configuration, side: side, rate: rate, options: options, placement: placement)
                results["\(side.key) \(configuration.name)@\(rate)", default: []].append(measurement)
                let label = side.prefix + configuration.name
                // Per datagram delivered too: what the executable's table compares (pool-ratios.py).
                var line = String(format: "repeat %d  %@ %7d/s  %.2f us/datagram  %.3f syscalls/datagram  delivered %.1f%%  %.2f us/delivered",
                                  repeatIndex, label.padding(toLength: max(15, label.count), withPad: " ", startingAt: 0) as NSString,
                                  rate, measurement.cpuMicrosecondsPerDatagram, measurement.syscallsPerDatagram, measurement.delivered * 100,
                                  measurement.cpuMicrosecondsPerDelivered)
                if let worker = measurement.workerMicrosecondsPerDelivered { line += String(format: "  worker %.2f us/delivered", worker) }
                line += loadLine(measurement, rate: rate, placement: placement)
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        }
    }
}

/// The load's figures at the end of a per-run line, for bench/throughput.sh: what the source
/// sent, the sockets' drops, the forwarder's and the generator's CPU shares, how busy each
/// pinned CPU was, and what limited the run (`Limit`).
func loadLine(_ measurement: Measurement, rate: Int, placement: Placement?) -> String {
    let load = measurement.load
    var line = String(format: "  sent %.0f/s  socket drops forwarder %llu sink %llu  forwarder CPU %.0f%%  generator CPU %.0f%%",
                      load.sentPerSecond, load.forwarderDrops, load.sinkDrops, load.forwarderCPU * 100, load.generatorCPU * 100)
    if let placement, let busy = load.busy {
        line += "  busy \(placement.sourceCPUName) " + String(format: "%.0f%%", busy.source * 100)
            + " \(placement.forwarderCPUName) " + String(format: "%.0f%%", busy.forwarder * 100)
    }
    return line + "  limit \(Limit(measurement, rate: rate).rawValue)"
}

/// Each configuration's plain and "+ts" runs in the other order, so neither always runs second.
func alternated(_ measured: [Configuration]) -> [Configuration] {
    stride(from: 0, to: measured.count, by: 2).flatMap { [measured[$0 + 1], measured[$0]] }
}

var table = BenchTable.render(results, rates: options.rates, names: measured.map(\.name), withReference: options.reference != nil)
if options.executable != nil {
    table += "\n" + BenchTable.executable(results, rates: options.rates, names: measured.map(\.name), withReference: options.reference != nil)
}
print(table, terminator: "")
if let output = options.output {
    try table.write(toFile: output, atomically: true, encoding: .utf8)
}
