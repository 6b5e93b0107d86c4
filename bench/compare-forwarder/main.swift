import DatagramEngine
import Glibc
// Endpoint and TrafficClass moved from DatagramEngine to NetAddress (issue 23); older engines
// have no NetAddress module.
#if canImport(NetAddress)
import NetAddress
#endif
import Synchronization

// One forwarder written against the engine API that every commit since issue 8 shares, so that
// bench/compare-instructions.sh can build it against an old and a new engine and count the
// engine's work alone: the harness around it is the same source at both commits. It is built
// in a throwaway worktree of each commit as that commit's engine-bench target (it is not part
// of this package), and takes the C reference's command line, so `engine-bench --count
// --side c --c-forwarder PATH` drives either build exactly like the reference:
//
//   forwarder --backend perpacket|mmsg[+gso]|uring[+gso] --listen HOST:PORT --to HOST:PORT --stats FILE
//
// Each turn is forwardTurn's (bench/engine-bench/ForwardLoop.swift): receive, enqueue each
// datagram to --to with its TOS byte, flush; then the counters go to the --stats file, as
// the C reference stores them. Nothing else per turn (the old harness's getrusage is gone).
// It duplicates the set-up of `engine-bench serve` on purpose: it must build against the old
// engines, which engine-bench's own files no longer do. When stopped (the flag in word 7 of
// the --stats file, or SIGTERM) it appends "NAME in out syscalls gsoSegments gsoSends
// receiveBatches" to $COMPARE_REPORT.

/// Set by SIGTERM / SIGINT; read once per turn, as the C reference reads its flag.
enum Stop { static let requested = Atomic<Bool>(false) }

func fail(_ message: String) -> Never {
    let line = "compare-forwarder: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
    guard let value = arguments.popFirst() else { fail("\(name) needs a value") }
    options[name] = value
}
guard let name = options["--backend"], let listen = options["--listen"].flatMap(Endpoint.init(parsing:)),
      let destination = options["--to"].flatMap(Endpoint.init(parsing:)), let statsPath = options["--stats"] else {
    fail("usage: forwarder --backend NAME --listen HOST:PORT --to HOST:PORT --stats FILE")
}
var configuration: EngineConfiguration
switch name {
case "perpacket": configuration = EngineConfiguration(backend: .perPacket, gso: false)
case "mmsg", "mmsg+gso": configuration = EngineConfiguration(backend: .mmsg, gso: name.hasSuffix("+gso"))
case "uring", "uring+gso": configuration = EngineConfiguration(backend: .uring, gso: name.hasSuffix("+gso"))
default: fail("unknown backend \(name)")
}
#if ENGINE_HAS_GRO
// engine-bench's forwarder runs with GRO off outside its +gro rows; so does this one.
configuration.gro = false
#endif

let fd = open(statsPath, O_RDWR | O_CREAT, 0o644)
guard fd >= 0, ftruncate(fd, 64) == 0, let mapped = mmap(nil, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
      mapped != MAP_FAILED else { fail("cannot map \(statsPath)") }
close(fd)
let stats = mapped.bindMemory(to: UInt64.self, capacity: 8)
stats.initialize(repeating: 0, count: 8)

do {
    let engine = try DatagramEngine(configuration: configuration)
    let inbound = try UDPSocket(binding: listen)
    _ = try engine.register(inbound)
    let outbound = try engine.register(UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!))
    signal(SIGTERM) { _ in Stop.requested.store(true, ordering: .relaxed) }
    signal(SIGINT) { _ in Stop.requested.store(true, ordering: .relaxed) }
    print("listening on \(inbound.localEndpoint)")
    fflush(nil)  // every stream: the driver waits for this line
    while !Stop.requested.load(ordering: .relaxed) {
        let count = engine.receive(timeoutMilliseconds: 20)
        for index in 0..<count {
            let datagram = engine.received(index)
            engine.enqueue(socket: outbound, to: destination, trafficClass: datagram.trafficClass, bytes: datagram.bytes)
        }
        engine.flush()
        // The C reference's layout: in, out, syscalls, GSO segments, send errors.
        let counters = engine.counters
        stats[0] = counters.datagramsIn
        stats[1] = counters.datagramsOut
        stats[2] = counters.syscalls
        stats[3] = counters.gsoSegments
        stats[4] = counters.sendErrors.total
        // Word 7: the driver's stop flag, set before its signal (ForwarderProcess.stop in engine-bench):
        // under valgrind a signal reaches an idle forwarder seconds of empty turns late.
        if stats[7] != 0 { break }
    }
    let counters = engine.counters
    if let report = getenv("COMPARE_REPORT"), let file = fopen(report, "a") {
        fputs("\(name) \(counters.datagramsIn) \(counters.datagramsOut) \(counters.syscalls) \(counters.gsoSegments) "
              + "\(counters.gsoSends) \(counters.receiveBatches)\n", file)
        fclose(file)
    }
} catch {
    fail("\(error)")
}
