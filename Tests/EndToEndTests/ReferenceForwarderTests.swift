import DatagramEngine
import Foundation
import Glibc
import NetAddress
import XCTest

/// The C reference forwarder (bench/reference/forwarder.c), built here with the system compiler
/// as `make reference` builds it: the baseline the benchmarks measure the engine against must
/// itself forward every datagram with its marks, latch like the relay's legs, and be measured
/// by the load generator the way the relay is.
final class ReferenceForwarderTests: XCTestCase {
    static let binary: Result<String, Error> = Result {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("bench/reference/forwarder.c").path
        let output = NSTemporaryDirectory() + "mediarelay-reference-forwarder-\(getpid())"
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        compiler.arguments = ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", output, source, "-luring"]
        try compiler.run()
        compiler.waitUntilExit()
        guard compiler.terminationStatus == 0 else { throw CompileError() }
        return output
    }

    struct CompileError: Error {}

    /// A running forwarder and the address it printed.
    final class Forwarder {
        let process = Process()
        let address: Endpoint
        let stats = NSTemporaryDirectory() + "mediarelay-reference-\(getpid())-\(UUID().uuidString).stats"
        let legsFile = NSTemporaryDirectory() + "mediarelay-reference-\(getpid())-\(UUID().uuidString).legs"

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: try ReferenceForwarderTests.binary.get())
            process.arguments = arguments + ["--stats", stats] + (arguments.contains("--legs") ? ["--legs-file", legsFile] : [])
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            address = try XCTUnwrap(line.split(separator: " ").last.flatMap { Endpoint(parsing: $0.trimmingCharacters(in: .whitespacesAndNewlines)) }, line)
        }

        /// Datagrams in and out, from its counters file.
        func counters() throws -> (in: UInt64, out: UInt64) {
            (try counter(0), try counter(1))
        }

        /// Counter `index` of its counters file (see --stats in forwarder.c).
        func counter(_ index: Int) throws -> UInt64 {
            try Data(contentsOf: URL(fileURLWithPath: stats)).withUnsafeBytes { $0.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self) }
        }

        /// The legs of each session, as listed in its --legs-file.
        func legs() throws -> [[Endpoint]] {
            try String(contentsOfFile: legsFile, encoding: .utf8).split(separator: "\n").map { line in
                try line.split(separator: " ").map { try XCTUnwrap(Endpoint(parsing: String($0))) }
            }
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
            unlink(stats)
            unlink(legsFile)
        }
    }

    func testEveryBackendForwardsEveryDatagramWithItsMarks() throws {
        // Runs of equal size and marking (GSO may merge them) and changes of marking and size.
        var batch: [([UInt8], TrafficClass)] = []
        let marks = [TrafficClass(dscp: 46, ecn: .ect1), TrafficClass(dscp: 46, ecn: .ce), TrafficClass(dscp: 34, ecn: .ect0), TrafficClass(rawValue: 0)]
        for run in 0..<8 {
            for index in 0..<6 { batch.append(([UInt8](repeating: UInt8(run * 6 + index), count: run % 2 == 0 ? 200 : 1200), marks[run % 4])) }
        }
        for backend in ["perpacket", "mmsg", "mmsg+gso", "uring", "uring+gso", "mmsg+gso+gro", "uring+gso+gro"] {
            let peers = try Peers(count: 2)
            let forwarder = try Forwarder(["--backend", backend, "--listen", "127.0.0.1:0", "--to", peers.address(1).description])
            defer { forwarder.stop() }
            peers.send(from: 0, to: forwarder.address, batch: batch)
            let arrivals = peers.collect(expected: batch.count, seconds: 10)
            XCTAssertEqual(arrivals.count, batch.count, backend)
            let sent = batch.map { "\($0.0.first!) \($0.0.count) \($0.1.rawValue)" }.sorted()
            let received = arrivals.map { "\($0.bytes.first!) \($0.bytes.count) \($0.trafficClass.rawValue)" }.sorted()
            XCTAssertEqual(received, sent, "\(backend): every datagram with its size and TOS byte")
            // The counters are stored after the turn's sends, a moment after the datagrams leave.
            var counters = try forwarder.counters()
            let deadline = Date().addingTimeInterval(10)
            while counters.out < UInt64(batch.count) && Date() < deadline {
                usleep(10_000)
                counters = try forwarder.counters()
            }
            XCTAssertEqual(counters.in, UInt64(batch.count), backend)
            XCTAssertEqual(counters.out, UInt64(batch.count), backend)
        }
    }

    /// +gro as the engine does it: a burst sent as one GSO send reaches the forwarder as one
    /// UDP GRO buffer on loopback, is split (the last datagram shorter) and leaves as one GSO
    /// send, each datagram with its size and marks.
    func testGROSplitsABurstAndPassesItOnAsOneGSOSend() throws {
        let marks = [TrafficClass(dscp: 46, ecn: .ect1), TrafficClass(dscp: 34, ecn: .ect0)]
        let sizes = Array(repeating: 1200, count: 7) + [640]
        let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 2 * sizes.reduce(0, +), alignment: 8)
        defer { payload.deallocate() }
        for backend in ["mmsg+gso+gro", "uring+gso+gro"] {
            let peers = try Peers(count: 1)
            let forwarder = try Forwarder(["--backend", backend, "--listen", "127.0.0.1:0", "--to", peers.address(0).description])
            defer { forwarder.stop() }
            let source = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: true, gro: false))
            let socket = try source.register(UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!))
            var offset = 0, number: UInt8 = 0
            for mark in marks {
                for size in sizes {
                    let slice = UnsafeMutableRawBufferPointer(rebasing: payload[offset..<(offset + size)])
                    slice.initializeMemory(as: UInt8.self, repeating: number)
                    source.enqueue(socket: socket, to: forwarder.address, trafficClass: mark, bytes: UnsafeRawBufferPointer(slice))
                    offset += size
                    number += 1
                }
            }
            source.flush()
            XCTAssertEqual(source.counters.gsoSends, 2, "two bursts, one GSO send each")
            let arrivals = peers.collect(expected: 16, seconds: 10)
            let expected = marks.enumerated().flatMap { run in
                sizes.enumerated().map { "\(run.offset * 8 + $0.offset) \($0.element) \(run.element.rawValue)" }
            }
            XCTAssertEqual(arrivals.map { "\($0.bytes.first!) \($0.bytes.count) \($0.trafficClass.rawValue)" }.sorted(), expected.sorted(), backend)
            var groSegments = try forwarder.counter(5)
            let deadline = Date().addingTimeInterval(10)
            while try forwarder.counter(3) < 16 && Date() < deadline {
                usleep(10_000)
                groSegments = try forwarder.counter(5)
            }
            XCTAssertEqual(groSegments, 16, "\(backend): both bursts arrived as GRO buffers and were split")
            XCTAssertEqual(try forwarder.counter(3), 16, "\(backend): and left as GSO sends")
        }
    }

    func testLegsLatchOntoTheirFirstSourceAndRefuseASecond() throws {
        let peers = try Peers(count: 3)
        let forwarder = try Forwarder(["--backend", "mmsg", "--listen", "127.0.0.1:0", "--legs", "1"])
        defer { forwarder.stop() }
        let legs = try forwarder.legs()
        XCTAssertEqual(legs.count, 1)
        XCTAssertEqual(legs.first?.first, forwarder.address)
        let legB = try XCTUnwrap(legs.first?.last)
        peers.send(from: 1, to: legB, [1])  // B latches onto peer 1; nowhere to go yet
        peers.send(from: 0, to: forwarder.address, [2], trafficClass: TrafficClass(dscp: 46, ecn: .ect1))
        let first = peers.collect(expected: 1, seconds: 10)
        XCTAssertEqual(first.map(\.peer), [1])
        XCTAssertEqual(first.first?.trafficClass, TrafficClass(dscp: 46, ecn: .ect1))
        // A third source sending to the latched leg A is not forwarded; peer 0 still is. The
        // forwarder stores its counters after each turn's sends: once it has counted both in,
        // [3] was routed and anything sent for it went out before [4], to the same peer.
        peers.send(from: 2, to: forwarder.address, [3])
        peers.send(from: 0, to: forwarder.address, [4])
        var received = try forwarder.counters().in
        let deadline = Date().addingTimeInterval(10)
        while received < 4 && Date() < deadline {
            usleep(10_000)
            received = try forwarder.counters().in
        }
        XCTAssertEqual(received, 4, "the forwarder read [1] to [4]")
        let later = peers.collect(expected: 1, seconds: 10) { $0.bytes == [4] } + peers.pending()
        XCTAssertEqual(later.map(\.bytes), [[4]])
    }

    func testTheLoadGeneratorMeasuresItThroughItsCountersAndCPUClock() throws {
        let forwarder = try Forwarder(["--backend", "perpacket", "--listen", "127.0.0.1:0", "--legs", "4"])
        defer { forwarder.stop() }
        XCTAssertEqual(try forwarder.legs().map(\.count), [2, 2, 2, 2])
        let object = try LoadGeneratorTests.runLoad(["--legs", forwarder.legsFile, "--forwarder-stats", forwarder.stats,
                                                     "--relay-pid", "\(forwarder.process.processIdentifier)", "--streams", "4",
                                                     "--rate", "4000", "--seconds", "1", "--warmup", "0.2", "--tos", "\((46 << 2) | 1)"])
        let sent = try XCTUnwrap(object["sent"] as? Int)
        XCTAssertGreaterThan(sent, 1000)
        XCTAssertEqual(object["received"] as? Int, sent, "every datagram crossed the forwarder")
        XCTAssertEqual(object["ecn_kept"] as? Double, 1)
        XCTAssertEqual(object["dscp_kept"] as? Double, 1)
        XCTAssertEqual(object["relay_engine"] as? String, "c-perpacket")
        XCTAssertGreaterThan(try XCTUnwrap(object["relay_cpu_seconds"] as? Double), 0)
        // perpacket: one recvmsg and one sendmsg per datagram, plus epoll_wait and the EAGAIN.
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(object["relay_syscalls_per_packet"] as? Double), 2)
        XCTAssertGreaterThanOrEqual(try forwarder.counters().in, UInt64(sent))
    }
}
