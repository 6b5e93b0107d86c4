import DatagramEngine
import Foundation
import Glibc
import NetAddress
import SystemSupport

/// `engine-bench --count N`: one forwarder (ours as `engine-bench serve`, the C reference or
/// the relay executable) as a child process, started under an optional wrapper such as valgrind or strace
/// (`--wrap "valgrind --tool=callgrind"`), sent exactly N datagrams in bursts of `--burst` at
/// `--rates`' first rate, then stopped with SIGTERM once it has forwarded them (or has stalled).
/// Counting instructions or system calls over a fixed number of datagrams does not depend on
/// how busy the machine is, unlike CPU time (bench/profile-forwarder.sh).
enum FixedCount {
    static func run(_ options: BenchOptions, count: Int) throws {
        guard let configuration = Configuration.named(options.only) else {
            fail("--count needs --only NAME: \(configurations.map(\.name).joined(separator: ", "))")
        }
        let side: Side
        switch options.side {
        case "c":
            guard let reference = options.reference else { fail("--side c needs the C reference (--c-forwarder PATH)") }
            side = .reference(reference)
        case "exe":
            guard let executable = options.executable else { fail("--side exe needs the relay (--executable PATH)") }
            side = .executable(executable, listen: options.listenAddress)
        default:
            side = .harness
        }

        let (sink, destination, stopSink) = startSink()
        defer { stopSink() }
        sink.with { sink.measuring = true }
        let forwarder = try side.start(configuration, destination: destination, wrap: options.wrap)
        let source = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: options.sourceGSO))
        let sender = try source.register(UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!))
        let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: options.size, alignment: 8)
        defer { payload.deallocate() }
        payload.initializeMemory(as: UInt8.self, repeating: 0x5A)

        // Bursts at absolute deadlines, `burst / rate` apart.
        let rate = options.rates[0]
        let interval = UInt64(1e9 * Double(options.burst) / Double(rate))
        var next = MonotonicClock.now()
        var sent = 0
        while sent < count {
            let burst = min(options.burst, count - sent)
            for _ in 0..<burst {
                source.enqueue(socket: sender, to: forwarder.target, trafficClass: TrafficClass(dscp: 46, ecn: .ect1),
                               bytes: UnsafeRawBufferPointer(payload))
            }
            source.flush()
            sent += burst
            next += interval
            MonotonicClock.sleep(until: next)
        }
        // Wait for the last of them; stop early when nothing moved for two seconds (a drop). The
        // relay executable's own count is a snapshot up to 100 ms old: its datagrams are counted
        // at the sink, and its syscalls and GSO sends by strace, not here.
        func forwarded() throws -> UInt64 { try forwarder.read().counters?.forwarded ?? sink.with { sink.sunk } }
        var last = try forwarded()
        var still = 0
        while last < UInt64(count) && still < 200 {
            usleep(10_000)
            let now = try forwarded()
            still = now == last ? still + 1 : 0
            last = now
        }
        let counters = try forwarder.read().counters
        forwarder.stop()
        let sunk = sink.with { sink.sunk }
        let engine = counters.map { "syscalls \($0.syscalls) gso \($0.gso)" } ?? "syscalls - gso -"
        print("\(options.side) \(configuration.name) sent \(count) forwarded \(counters?.forwarded ?? sunk) \(engine) sunk \(sunk)")
    }
}
