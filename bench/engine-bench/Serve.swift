import DatagramEngine
import Glibc
import NetAddress
import Synchronization

/// `engine-bench serve`: our forwarder alone in its own process, with the C reference's command
/// line (`--backend NAME --listen 127.0.0.1:PORT --to HOST:PORT [--stats FILE]`) and the same turn,
/// counters file and SIGTERM stop, so a profiler (valgrind, strace) can run the two exactly alike
/// (bench/profile-forwarder.sh).
enum Serve {
    /// Set by SIGTERM / SIGINT; read once per turn, as the C reference reads its flag.
    static let stopping = Atomic<Bool>(false)

    static func run(_ arguments: [String]) -> Never {
        var backendName: String?
        var listen: Endpoint?
        var destination: Endpoint?
        var statsPath: String?
        var index = 0
        while index + 1 < arguments.count {
            let value = arguments[index + 1]
            switch arguments[index] {
            case "--backend": backendName = value
            case "--listen": listen = Endpoint(parsing: value)
            case "--to": destination = Endpoint(parsing: value)
            case "--stats": statsPath = value
            default: fail("serve: unknown option \(arguments[index])")
            }
            index += 2
        }
        guard index == arguments.count, let backendName, let listen, let destination,
              let configuration = Configuration.named(backendName) else {
            fail("usage: engine-bench serve --backend perpacket|mmsg[+gso][+gro]|uring[+gso][+gro][+ts] --listen HOST:PORT --to HOST:PORT [--stats FILE]")
        }
        let published = statsPath.map(mapStats)
        do {
            let engine = try DatagramEngine(configuration: forwarderConfiguration(configuration))
            let inbound = try UDPSocket(binding: listen)
            _ = try engine.register(inbound)
            let outbound = try engine.register(UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!))
            signal(SIGTERM) { _ in Serve.stopping.store(true, ordering: .relaxed) }
            signal(SIGINT) { _ in Serve.stopping.store(true, ordering: .relaxed) }
            print("listening on \(inbound.localEndpoint)")
            fflush(nil)  // every stream: the harness waits for this line
            while !stopping.load(ordering: .relaxed) {
                forwardTurn(engine, through: outbound, to: destination)
                if let published {
                    // The C reference's layout: in, out, syscalls, GSO segments, send errors.
                    let counters = engine.counters
                    published[0] = counters.datagramsIn
                    published[1] = counters.datagramsOut
                    published[2] = counters.syscalls
                    published[3] = counters.gsoSegments
                    published[4] = counters.sendErrors.total
                    // Word 7: the harness's stop flag (see ForwarderProcess.stop).
                    if published[7] != 0 { break }
                }
            }
        } catch {
            fail("serve: \(error)")
        }
        exit(0)
    }

    /// The counters file: 64 bytes of u64, mapped shared so the harness reads it without a call.
    private static func mapStats(_ path: String) -> UnsafeMutablePointer<UInt64> {
        let fd = open(path, O_RDWR | O_CREAT, 0o644)
        guard fd >= 0, ftruncate(fd, 64) == 0,
              let mapped = mmap(nil, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            fail("serve: cannot map --stats \(path)")
        }
        close(fd)
        let words = mapped.bindMemory(to: UInt64.self, capacity: 8)
        words.initialize(repeating: 0, count: 8)
        return words
    }
}
