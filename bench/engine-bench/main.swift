import DatagramEngine
import Foundation
import Glibc
import SystemSupport

// The engine benchmark: a forwarder over loopback at fixed offered rates. A source thread sends
// 200-byte datagrams at a paced rate to a forwarder thread, which forwards each one (with its
// TOS byte) to a sink thread. Only the forwarder's engine changes between runs; its thread CPU
// (getrusage RUSAGE_THREAD) and the engine's syscall counter give CPU and syscalls per
// datagram. Configurations are interleaved inside each repeat so machine drift falls on all.

struct Configuration {
    let name: String
    let backend: Backend
    let gso: Bool
}

let configurations = [
    Configuration(name: "perpacket", backend: .perPacket, gso: false),
    Configuration(name: "mmsg", backend: .mmsg, gso: false),
    Configuration(name: "mmsg+gso", backend: .mmsg, gso: true),
    Configuration(name: "uring", backend: .uring, gso: false),
    Configuration(name: "uring+gso", backend: .uring, gso: true),
]

struct Options {
    var rates = [50_000, 200_000]
    var seconds = 2.0
    var repeats = 3
    var size = 200
    var output: String?

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
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
            case "--help":
                print("engine-bench [--rates 50000,200000] [--seconds 2] [--repeats 3] [--size 200] [--out FILE.md]")
                exit(0)
            default: fail("unknown option \(arguments[index])")
            }
            index += 1
        }
        guard options.repeats >= 1, options.seconds > 0, (1...1472).contains(options.size),
              options.rates.allSatisfy({ (1...2_000_000).contains($0) }) else { fail("values out of range") }
        return options
    }
}

func number(_ text: String, _ option: String) -> Int {
    guard let value = Int(text) else { fail("\(option) \(text): expected an integer") }
    return value
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("engine-bench: \(message)\n".utf8))
    exit(2)
}

func threadCPU() -> Double { CPUTime.thread().totalSeconds }

struct Measurement {
    var delivered: Double
    var cpuMicrosecondsPerDatagram: Double
    var syscallsPerDatagram: Double
    var gsoShare: Double
}

/// Flags shared by the three threads of one run.
final class RunState: @unchecked Sendable {
    let lock = NSLock()
    var stop = false
    var forwarderReady: Endpoint?
    var sinkReady: Endpoint?
    var forwarded: UInt64 = 0
    var syscalls: UInt64 = 0
    var gsoSegments: UInt64 = 0
    var cpu = 0.0
    var sunk: UInt64 = 0
    var measuring = false
    var measureStart: (cpu: Double, forwarded: UInt64, syscalls: UInt64, gso: UInt64)?

    func with<T>(_ body: () -> T) -> T { lock.lock(); defer { lock.unlock() }; return body() }
}

func run(_ configuration: Configuration, rate: Int, options: Options) throws -> Measurement {
    let state = RunState()
    let loopback = Endpoint(host: "127.0.0.1", port: 0)!
    let sink = Thread {
        let engine = try! DatagramEngine(configuration: EngineConfiguration(backend: .mmsg))
        let socket = try! UDPSocket(binding: loopback)
        _ = try! engine.register(socket)
        state.with { state.sinkReady = socket.localEndpoint }
        while !state.with({ state.stop }) {
            let count = engine.receive(timeoutMilliseconds: 20)
            if count > 0 { state.with { if state.measuring { state.sunk += UInt64(count) } } }
        }
    }
    sink.start()
    while state.with({ state.sinkReady == nil }) { usleep(1000) }
    let destination = state.with { state.sinkReady! }

    let forwarder = Thread {
        let engine = try! DatagramEngine(configuration: EngineConfiguration(backend: configuration.backend, gso: configuration.gso))
        let inbound = try! UDPSocket(binding: loopback)
        _ = try! engine.register(inbound)
        let outbound = try! engine.register(UDPSocket(binding: loopback))
        state.with { state.forwarderReady = inbound.localEndpoint }
        var wasMeasuring = false
        while !state.with({ state.stop }) {
            let count = engine.receive(timeoutMilliseconds: 20)
            for index in 0..<count {
                let datagram = engine.received(index)
                engine.enqueue(socket: outbound, to: destination, trafficClass: datagram.trafficClass, bytes: datagram.bytes)
            }
            engine.flush()
            let measuring = state.with { state.measuring }
            if measuring && !wasMeasuring {
                let counters = engine.counters
                state.with { state.measureStart = (threadCPU(), counters.datagramsOut, counters.syscalls, counters.gsoSegments) }
            }
            if measuring {
                let counters = engine.counters
                let cpu = threadCPU()
                state.with {
                    state.cpu = cpu - state.measureStart!.cpu
                    state.forwarded = counters.datagramsOut - state.measureStart!.forwarded
                    state.syscalls = counters.syscalls - state.measureStart!.syscalls
                    state.gsoSegments = counters.gsoSegments - state.measureStart!.gso
                }
            }
            wasMeasuring = measuring
        }
    }
    forwarder.start()
    while state.with({ state.forwarderReady == nil }) { usleep(1000) }
    let target = state.with { state.forwarderReady! }

    // The source: bursts every millisecond at absolute deadlines, so the offered rate holds.
    let source = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false))
    let sender = try source.register(UDPSocket(binding: loopback))
    let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: options.size, alignment: 8)
    defer { payload.deallocate() }
    payload.initializeMemory(as: UInt8.self, repeating: 0x5A)
    let tick = 1_000_000  // ns
    let warmup = 0.3
    var next = timespec()
    clock_gettime(CLOCK_MONOTONIC, &next)
    let start = Double(next.tv_sec) + Double(next.tv_nsec) / 1e9
    var sent = 0
    var offered = 0
    var elapsed = 0.0
    while elapsed < warmup + options.seconds {
        if !state.with({ state.measuring }) && elapsed >= warmup {
            state.with { state.measuring = true }
            offered = 0
        }
        let due = Int((elapsed + 0.001) * Double(rate)) - sent
        for _ in 0..<max(0, due) {
            source.enqueue(socket: sender, to: target, trafficClass: TrafficClass(dscp: 46, ecn: .ect1), bytes: UnsafeRawBufferPointer(payload))
        }
        source.flush()
        sent += max(0, due)
        offered += max(0, due)
        next.tv_nsec += tick
        if next.tv_nsec >= 1_000_000_000 { next.tv_nsec -= 1_000_000_000; next.tv_sec += 1 }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil)
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        elapsed = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 - start
    }
    usleep(100_000)  // let the last bursts through
    let result = state.with { (state.cpu, state.forwarded, state.syscalls, state.sunk, state.gsoSegments) }
    state.with { state.stop = true }
    while forwarder.isExecuting || sink.isExecuting { usleep(1000) }
    let forwarded = Double(max(result.1, 1))
    return Measurement(delivered: Double(result.3) / Double(max(offered, 1)),
                       cpuMicrosecondsPerDatagram: result.0 * 1e6 / forwarded,
                       syscallsPerDatagram: Double(result.2) / forwarded,
                       gsoShare: Double(result.4) / forwarded)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
var results: [String: [Measurement]] = [:]
for repeatIndex in 1...options.repeats {
    for rate in options.rates {
        for configuration in configurations {
            let measurement = try run(configuration, rate: rate, options: options)
            results["\(configuration.name)@\(rate)", default: []].append(measurement)
            let name = configuration.name.padding(toLength: 10, withPad: " ", startingAt: 0)
            FileHandle.standardError.write(Data(String(format: "repeat %d  %@ %7d/s  %.2f us/datagram  %.3f syscalls/datagram  delivered %.1f%%\n",
                                                       repeatIndex, name as NSString, rate,
                                                       measurement.cpuMicrosecondsPerDatagram, measurement.syscallsPerDatagram,
                                                       measurement.delivered * 100).utf8))
        }
    }
}

var table = "| offered rate | engine | forwarder CPU us/datagram, median (min-max) | syscalls/datagram | sent as GSO segments | delivered | CPU saved vs perpacket |\n"
table += "|---:|---|---:|---:|---:|---:|---:|\n"
for rate in options.rates {
    let baseline = median(results["perpacket@\(rate)"]!.map(\.cpuMicrosecondsPerDatagram))
    for configuration in configurations {
        let runs = results["\(configuration.name)@\(rate)"]!
        let cpu = runs.map(\.cpuMicrosecondsPerDatagram)
        let saved = configuration.name == "perpacket" ? "-" : String(format: "%.0f%%", (1 - median(cpu) / baseline) * 100)
        table += String(format: "| %d/s | %@ | %.2f (%.2f-%.2f) | %.3f | %.0f%% | %.1f%% | %@ |\n",
                        rate, configuration.name as NSString, median(cpu), cpu.min()!, cpu.max()!,
                        median(runs.map(\.syscallsPerDatagram)), median(runs.map(\.gsoShare)) * 100,
                        median(runs.map(\.delivered)) * 100, saved as NSString)
    }
}
print(table, terminator: "")
if let output = options.output {
    try table.write(toFile: output, atomically: true, encoding: .utf8)
}
