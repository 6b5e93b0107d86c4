import Glibc
import NetAddress
import XCTest
import Foundation
@testable import DatagramEngine

final class EngineBehaviourTests: XCTestCase {
    /// Forces a real refusal: kernel.io_uring_disabled=2 makes io_uring_setup fail with EPERM
    /// for everyone, as a container's seccomp profile would. Needs root to write the sysctl.
    func testAutoFallsBackToMmsgWhenIOURingIsRefused() throws {
        let path = "/proc/sys/kernel/io_uring_disabled"
        guard let previous = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw XCTSkip("this kernel has no \(path) to refuse io_uring with")
        }
        guard access(path, W_OK) == 0 else { throw XCTSkip("writing \(path) needs root") }
        try "2".write(toFile: path, atomically: false, encoding: .utf8)
        defer { try? previous.write(toFile: path, atomically: false, encoding: .utf8) }

        let engine = try DatagramEngine(configuration: EngineConfiguration())
        XCTAssertEqual(engine.backend, .mmsg)
        XCTAssertTrue(engine.backendReason.contains("io_uring refused"), engine.backendReason)
        XCTAssertTrue(engine.backendReason.contains("EPERM"), engine.backendReason)
        XCTAssertThrowsError(try DatagramEngine(configuration: EngineConfiguration(backend: .uring))) { error in
            XCTAssertTrue("\(error)".contains("io_uring_setup"), "\(error)")
        }
        // And the fallback engine works.
        let a = try engine.register(UDPSocket(binding: Loopback.v4))
        let b = try UDPSocket(binding: Loopback.v4)
        _ = try engine.register(b)
        [UInt8](repeating: 1, count: 10).withUnsafeBytes { raw in
            engine.enqueue(socket: a, to: b.localEndpoint, trafficClass: TrafficClass(rawValue: 1), bytes: raw)
            engine.flush()
        }
        XCTAssertEqual(Loopback.drain(engine, count: 1), 1)
    }

    func testAutoChoosesIOURingWhenAllowedAndSaysWhy() throws {
        let engine = try DatagramEngine(configuration: EngineConfiguration())
        XCTAssertEqual(engine.backend, .uring)
        XCTAssertEqual(engine.backendReason, "auto: io_uring is available")
    }

    func testTruncatedDatagramIsCountedAndDroppedAndNothingElseIsLost() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend, maxDatagramSize: 512))
            let receiver = try UDPSocket(binding: Loopback.v4)
            _ = try engine.register(receiver)
            let peer = try UDPSocket(binding: Loopback.v4)
            Loopback.send(from: peer, to: receiver.localEndpoint, bytes: [UInt8](repeating: 1, count: 1000))
            Loopback.send(from: peer, to: receiver.localEndpoint, bytes: [UInt8](repeating: 2, count: 512))
            var sizes: [Int] = []
            _ = Loopback.drain(engine, count: 1) { sizes.append($0.bytes.count) }
            XCTAssertEqual(sizes, [512], "\(backend)")
            XCTAssertEqual(engine.counters.truncated, 1, "\(backend)")
        }
    }

    /// SO_RXQ_OVFL: datagrams the kernel dropped on a full receive queue are reported.
    func testKernelDropsAreCounted() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            let receiver = try UDPSocket(binding: Loopback.v4, options: SocketOptions(receiveBufferBytes: 4096))
            let peer = try UDPSocket(binding: Loopback.v4)
            // Fill the queue before the engine reads it (for io_uring, before the receive is armed).
            for _ in 0..<200 { Loopback.send(from: peer, to: receiver.localEndpoint, bytes: [UInt8](repeating: 0, count: 1000)) }
            _ = try engine.register(receiver)
            let got = Loopback.drain(engine, count: 200, seconds: 1)
            Loopback.send(from: peer, to: receiver.localEndpoint, bytes: [1])
            _ = Loopback.drain(engine, count: 1, seconds: 2)
            XCTAssertLessThan(got, 200, "\(backend)")
            XCTAssertEqual(engine.counters.kernelDrops, UInt64(200 - got), "\(backend): every drop is reported")
        }
    }

    func testBindErrorNamesTheAddressAndWhatToDo() throws {
        let first = try UDPSocket(binding: Loopback.v4)
        XCTAssertThrowsError(try UDPSocket(binding: first.localEndpoint)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("127.0.0.1:\(first.localEndpoint.port)"), text)
            XCTAssertTrue(text.contains("EADDRINUSE"), text)
            XCTAssertTrue(text.contains("another socket holds this port"), text)
        }
        XCTAssertThrowsError(try UDPSocket(binding: Endpoint(host: "192.0.2.1", port: 0)!)) { error in
            XCTAssertTrue("\(error)".contains("EADDRNOTAVAIL"), "\(error)")
        }
    }

    /// A wake-up from another thread ends a wait that would otherwise last a minute: whether it
    /// comes while the engine is blocked (the other thread waits until this one sleeps in the
    /// kernel) or just before the wait starts. A lost wake-up sits out the whole minute, so
    /// half of it tells the two apart on any machine, however loaded.
    func testWakerInterruptsAWaitFromAnotherThread() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            _ = try engine.register(UDPSocket(binding: Loopback.v4))
            engine.receive(timeoutMilliseconds: 0)
            let waker = engine.waker
            let waiter = ThreadState.currentThreadID()
            XCTAssertGreaterThan(waiter, 0, "this thread's id from /proc/thread-self")
            let thread = Thread {
                ThreadState.waitUntilSleeping(waiter)
                waker.wake()
            }
            thread.start()
            var start = DispatchTime.now().uptimeNanoseconds
            XCTAssertEqual(engine.receive(timeoutMilliseconds: 60_000), 0, "\(backend)")
            XCTAssertTrue(engine.wasWoken, "\(backend): woken while blocked")
            XCTAssertLessThan(DispatchTime.now().uptimeNanoseconds - start, 30_000_000_000, "\(backend): the wake-up was not lost")
            engine.receive(timeoutMilliseconds: 0)
            XCTAssertFalse(engine.wasWoken, "\(backend): a wake-up is consumed once")

            waker.wake()
            start = DispatchTime.now().uptimeNanoseconds
            engine.receive(timeoutMilliseconds: 60_000)
            XCTAssertTrue(engine.wasWoken, "\(backend): woken by a wake-up that came first")
            XCTAssertLessThan(DispatchTime.now().uptimeNanoseconds - start, 30_000_000_000, "\(backend)")
        }
    }

    /// A closed socket's slot is reused with a new generation: the old identifier no longer
    /// reaches anything, and the new socket receives normally.
    func testUnregisterAndSlotReuse() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            let peer = try UDPSocket(binding: Loopback.v4)
            var firstSocket: UDPSocket? = try UDPSocket(binding: Loopback.v4)
            let firstAddress = firstSocket!.localEndpoint
            let first = try engine.register(firstSocket!)
            firstSocket = nil  // the engine holds the only reference now
            engine.unregister(first)
            XCTAssertEqual(engine.socketCount, 0)
            // The socket is closed when unregister returns (for io_uring, once its receive has
            // been cancelled), so its port can be bound again at once.
            let secondSocket = try UDPSocket(binding: firstAddress)
            let second = try engine.register(secondSocket)
            XCTAssertNotEqual(first, second)
            Loopback.send(from: peer, to: secondSocket.localEndpoint, bytes: [5])
            var from: [SocketID] = []
            _ = Loopback.drain(engine, count: 1) { from.append($0.socket) }
            XCTAssertEqual(from, [second], "\(backend)")
            // Sending through the stale identifier is refused and counted, not delivered.
            [UInt8(1)].withUnsafeBytes { raw in
                engine.enqueue(socket: first, to: peer.localEndpoint, trafficClass: TrafficClass(rawValue: 0), bytes: raw)
                engine.flush()
            }
            XCTAssertEqual(engine.counters.sendErrors.total, 1, "\(backend)")
        }
    }

    func testSendErrorsAreCountedByErrno() throws {
        let engine = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg))
        let v4Only = try engine.register(UDPSocket(binding: Loopback.v4))
        [UInt8(1)].withUnsafeBytes { raw in
            // An IPv4 socket cannot reach an IPv6 peer.
            engine.enqueue(socket: v4Only, to: Endpoint(host: "2001:db8::1", port: 9)!, trafficClass: TrafficClass(rawValue: 0), bytes: raw)
            engine.flush()
        }
        XCTAssertEqual(engine.counters.sendErrors.byName.first?.name, "EAFNOSUPPORT")
    }
}

/// A receive that ended (out of provided buffers) while the engine was reaping sends leaves its
/// last completion in the stash; unregister must find it there instead of waiting forever.
final class URingCancellationTests: XCTestCase {
    func testUnregisterAfterTheReceiveEndedWhileSending() throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = NSLock()
        nonisolated(unsafe) var failure: String?
        let thread = Thread {
            defer { done.signal() }
            do {
                var configuration = EngineConfiguration(backend: .uring)
                configuration.uringBuffers = 128
                let engine = try DatagramEngine(configuration: configuration)
                var flooded: UDPSocket? = try UDPSocket(binding: Loopback.v4)
                let address = flooded!.localEndpoint
                let floodedID = try engine.register(flooded!)
                flooded = nil
                let sender = try engine.register(UDPSocket(binding: Loopback.v4))
                engine.receive(timeoutMilliseconds: 1)  // arms the receives
                let peer = try UDPSocket(binding: Loopback.v4)
                for _ in 0..<400 { Loopback.send(from: peer, to: address, bytes: [1, 2, 3]) }
                [UInt8(9)].withUnsafeBytes { raw in
                    // Each flush reaps its send; the flood's completions (the kernel takes a
                    // few dozen per pass) are stashed meanwhile, until the buffers run out.
                    for _ in 0..<40 {
                        engine.enqueue(socket: sender, to: peer.localEndpoint, trafficClass: TrafficClass(rawValue: 0), bytes: raw)
                        engine.flush()
                    }
                }
                engine.unregister(floodedID)
                _ = try UDPSocket(binding: address)  // closed: the port binds again
            } catch {
                outcome.withLock { failure = "\(error)" }
            }
        }
        thread.start()
        XCTAssertEqual(done.wait(timeout: .now() + 20), .success, "unregister hung")
        XCTAssertNil(outcome.withLock { failure })
    }
}

/// Closing many sockets at once costs a few system calls, not a few per socket, and every
/// socket is closed when unregister returns.
final class BatchUnregisterTests: XCTestCase {
    func testFiftySocketsCloseTogether() throws {
        for backend in ConformanceTests.backends {
            let engine = try DatagramEngine(configuration: EngineConfiguration(backend: backend))
            var addresses: [Endpoint] = []
            var ids: [SocketID] = []
            for _ in 0..<50 {
                let socket = try UDPSocket(binding: Loopback.v4)
                addresses.append(socket.localEndpoint)
                ids.append(try engine.register(socket))
            }
            engine.receive(timeoutMilliseconds: 1)  // arms the io_uring receives
            let before = engine.counters.syscalls
            engine.unregister(ids)
            engine.receive(timeoutMilliseconds: 0)  // adds the io_uring calls made meanwhile to the counters
            XCTAssertEqual(engine.socketCount, 0, "\(backend)")
            for address in addresses { XCTAssertNoThrow(try UDPSocket(binding: address), "\(backend): \(address) is free") }
            if backend == .uring {
                XCTAssertLessThanOrEqual(engine.counters.syscalls - before, 6, "one submit and a wait or two for all 50")
            }
        }
    }
}

/// A receive that ran out of provided buffers must be armed again before the engine waits:
/// otherwise its socket's queued datagrams sit there until the wait times out. Found under
/// overload in the demo (200k/s), where it cut what the relay took in by half.
final class URingRearmTests: XCTestCase {
    func testAReceiveThatRanOutOfBuffersIsArmedBeforeTheNextWait() throws {
        var configuration = EngineConfiguration(backend: .uring)
        configuration.uringBuffers = 128
        let engine = try DatagramEngine(configuration: configuration)
        let flooded = try UDPSocket(binding: Loopback.v4)
        _ = try engine.register(flooded)
        let sender = try engine.register(UDPSocket(binding: Loopback.v4))
        let sink = try UDPSocket(binding: Loopback.v4)  // not registered: only a destination
        engine.receive(timeoutMilliseconds: 1)
        let peer = try UDPSocket(binding: Loopback.v4)
        for index in 0..<400 { Loopback.send(from: peer, to: flooded.localEndpoint, bytes: [UInt8(truncatingIfNeeded: index)]) }
        [UInt8(9)].withUnsafeBytes { raw in
            // The flood's completions, up to the end of its receive, are stashed meanwhile.
            for _ in 0..<40 {
                engine.enqueue(socket: sender, to: sink.localEndpoint, trafficClass: TrafficClass(rawValue: 0), bytes: raw)
                engine.flush()
            }
        }
        var total = 0
        var emptyTurns = 0
        while total < 400 && emptyTurns == 0 {
            // A long timeout: a turn that comes back empty while datagrams wait is the defect.
            let count = engine.receive(timeoutMilliseconds: 3_000)
            if count == 0 { emptyTurns += 1 }
            total += count
        }
        XCTAssertEqual(total, 400)
        XCTAssertEqual(emptyTurns, 0, "a receive waited while datagrams were queued")
        XCTAssertGreaterThan(engine.counters.receiveRestarts, 0, "the receive did run out of buffers")
    }
}

/// The scheduler's view of a thread, read from /proc: used to act only once a thread is
/// really blocked in the kernel, instead of sleeping and hoping it is.
enum ThreadState {
    /// This thread's kernel id, from /proc/thread-self ("PID/task/TID"): Glibc imports no gettid.
    static func currentThreadID() -> pid_t {
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return pid_t(target.split(separator: "/").last.map(String.init) ?? "") ?? 0
    }

    /// Waits (polling, at most 30 s) until thread `tid` of this process is asleep ('S').
    static func waitUntilSleeping(_ tid: pid_t) {
        let path = "/proc/self/task/\(tid)/stat"
        let deadline = DispatchTime.now().uptimeNanoseconds + 30_000_000_000
        while DispatchTime.now().uptimeNanoseconds < deadline {
            if let text = try? String(contentsOfFile: path, encoding: .utf8),
               let close = text.lastIndex(of: ")"), text[text.index(close, offsetBy: 2)] == "S" { return }
            usleep(1_000)
        }
    }
}
