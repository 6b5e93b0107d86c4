import Glibc
import NetAddress
import TestSupport
import XCTest
import MallocCounter
import SystemSupport
@testable import DatagramEngine

/// Streams in the engine, on real loopback sockets, on every backend: an echo service with many
/// connections, a client that never reads beside relayed datagrams, partial writes, peers that
/// close or reset mid-message, an accept storm; and the descriptors all given back afterwards.
final class StreamEngineTests: XCTestCase {
    private var descriptorsAtStart: Set<String> = []

    override func setUpWithError() throws {
        try TCPClientFixture.raiseDescriptorLimit(to: 16_384)
        descriptorsAtStart = TCPClientFixture.openDescriptors()
    }

    override func tearDown() {
        // Every engine, listener, stream and client of the test is gone by now: nothing is open
        // that was not open at the start. Not a count: one CI run saw 59 open at a test's start
        // and 55 at its end, descriptors the test never opened closed meanwhile (what they were
        // was not recorded; three full runs since did not see it). Each descriptor is its number
        // and what it points at (socket:[inode], ...), so a leak that reuses a number closed
        // meanwhile still shows.
        let now = TCPClientFixture.openDescriptors()
        XCTAssertEqual(now.subtracting(descriptorsAtStart), [], "descriptors left open")
        let gone = descriptorsAtStart.subtracting(now)
        // Not a failure (above), but said: should it come back, the log shows what was closed.
        if !gone.isEmpty { print("StreamEngineTests: open at the start, closed during the test: \(gone.sorted())") }
    }

    /// 1,000 connections each send their own sequence and read it back, in order and complete.
    func testThousandConnectionsEachGetTheirSequenceBackInOrder() throws {
        for backend in ConformanceTests.backends {
            let started = MonotonicClock.now()
            let echo = try StreamEchoHarness(backend: backend)
            let clients = 1_000
            let length = 2_048
            var fds: [Int32] = []
            var sent = [Int](repeating: 0, count: clients)
            var received = [Int](repeating: 0, count: clients)
            var wrong = 0
            let outgoing = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 8)
            let incoming = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 8)
            defer {
                outgoing.deallocate()
                incoming.deallocate()
            }
            for client in 0..<clients {
                fds.append(TCPClientFixture.connect(to: echo.server))
                if client % 64 == 63 { echo.turn() }  // accept as they come, as a server would
            }
            let done = echo.run(seconds: 20) {
                var complete = 0
                for client in 0..<clients {
                    if sent[client] < length {
                        // In two writes, so that some sequences arrive in pieces.
                        let piece = min(length - sent[client], sent[client] == 0 ? length / 2 + client % 100 : length)
                        for offset in 0..<piece { outgoing[offset] = TCPClientFixture.byte(client: client, offset: sent[client] + offset) }
                        if case .bytes(let bytes) = TCPClientFixture.send(fds[client], UnsafeRawBufferPointer(rebasing: outgoing[0..<piece])) {
                            sent[client] += bytes
                        }
                    }
                    if case .bytes(let bytes) = TCPClientFixture.receive(fds[client], into: incoming) {
                        for offset in 0..<bytes where incoming[offset] != TCPClientFixture.byte(client: client, offset: received[client] + offset) {
                            wrong += 1
                        }
                        received[client] += bytes
                    }
                    if received[client] == length { complete += 1 }
                }
                return complete == clients
            }
            XCTAssertTrue(done, "\(backend): \(received.filter { $0 == length }.count) of \(clients) complete")
            XCTAssertEqual(wrong, 0, "\(backend): bytes out of order or from another connection")
            XCTAssertEqual(echo.accepted.count, clients, "\(backend)")
            XCTAssertEqual(echo.strangers, 0, "\(backend)")
            // The clients leave; every stream is reported closed by its peer.
            for fd in fds { close(fd) }
            XCTAssertTrue(echo.run(seconds: 5) { echo.closed.count == clients }, "\(backend): \(echo.closed.count) closed")
            // (Counted here, not before: io_uring's last send completions may be reaped after
            // the client already has the bytes.)
            XCTAssertEqual(echo.engine.counters.streamBytesIn, UInt64(clients * length), "\(backend)")
            XCTAssertEqual(echo.engine.counters.streamBytesOut, UInt64(clients * length), "\(backend)")
            XCTAssertEqual(Set(echo.closed.values), [.peerClosed], "\(backend)")
            echo.turn()
            XCTAssertEqual(echo.engine.streamCount, 0, "\(backend): released after their closed events")
            print("\(backend): 1,000 echo connections in \((MonotonicClock.now() - started) / 1_000_000) ms")
        }
    }

    /// A client that never reads: the engine's output for it stops at the high water mark and
    /// further writes are refused and counted, with no allocation while it goes on; beside it
    /// a UDP flow through the same engine loses nothing.
    func testAClientThatNeverReadsStaysBoundedAndDatagramsStillFlow() throws {
        for backend in ConformanceTests.backends {
            // A fixed 16 KiB kernel send buffer (accepted sockets inherit the listener's), so
            // that the stream's own output is what fills up.
            let echo = try StreamEchoHarness(backend: backend, listenerSetUp: { listener in
                var size: Int32 = 16_384
                setsockopt(listener.descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            })
            let engine = echo.engine
            let stuck = TCPClientFixture.connect(to: echo.server, receiveBuffer: 4096)
            defer { close(stuck) }
            XCTAssertTrue(echo.run(seconds: 5) { echo.accepted.count == 1 }, "\(backend)")
            let stream = echo.accepted[0]
            // The relay: datagrams from `source` to the engine's `inbound` go out of `outbound` to `sink`.
            let inbound = try UDPSocket(binding: Loopback.v4)
            let inboundID = try engine.register(inbound)
            let outbound = try engine.register(UDPSocket(binding: Loopback.v4))
            let source = try UDPSocket(binding: Loopback.v4)
            let sink = try UDPSocket(binding: Loopback.v4)
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: 8)
            let sinkBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
            defer {
                chunk.deallocate()
                sinkBuffer.deallocate()
            }
            chunk.initializeMemory(as: UInt8.self, repeating: 0x5A)
            var address = sockaddr_storage()
            let length = inbound.localEndpoint.write(to: &address, family: AF_INET)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(source.descriptor, $0, length) }
            }
            XCTAssertEqual(connected, 0)
            let sinkEndpoint = sink.localEndpoint
            var datagramsSent = 0
            var datagramsArrived = 0
            var highest = 0
            var refusedWrites = 0

            func relayTurns(_ turns: Int, sending: Int = 8) {
                for _ in 0..<turns {
                    for _ in 0..<sending where send(source.descriptor, chunk.baseAddress, 200, 0) == 200 { datagramsSent += 1 }
                    engine.receive(timeoutMilliseconds: 1)
                    for index in 0..<engine.receivedCount where engine.received(index).socket == inboundID {
                        let datagram = engine.received(index)
                        engine.enqueue(socket: outbound, to: sinkEndpoint, trafficClass: datagram.trafficClass, bytes: datagram.bytes)
                    }
                    if !engine.write(stream, UnsafeRawBufferPointer(chunk)) { refusedWrites += 1 }
                    highest = max(highest, engine.outputPending(stream))
                    engine.flush()
                    while recv(sink.descriptor, sinkBuffer.baseAddress, 2048, Int32(MSG_DONTWAIT)) > 0 { datagramsArrived += 1 }
                }
            }
            relayTurns(200)  // fills the socket buffers and the output ring
            let refusedBefore = engine.counters.streamWritesRefused
            malloc_counter_start()
            relayTurns(300)
            let allocations = malloc_counter_stop()
            // The last datagrams still on their way.
            for _ in 0..<100 where datagramsArrived < datagramsSent { relayTurns(1, sending: 0) }
            let configuration = engine.configuration
            XCTAssertLessThanOrEqual(highest, configuration.streamHighWater, "\(backend): output beyond the high water mark")
            XCTAssertGreaterThan(engine.outputPending(stream), configuration.streamHighWater - 8192, "\(backend): the output filled up")
            XCTAssertEqual(engine.counters.streamWritesRefused, UInt64(refusedWrites), "\(backend): every refusal counted")
            XCTAssertGreaterThan(engine.counters.streamWritesRefused - refusedBefore, 290, "\(backend): writes refused once full")
            XCTAssertEqual(allocations, 0, "\(backend): allocations while the stream was stuck")
            XCTAssertGreaterThan(datagramsSent, 3000, "\(backend)")
            XCTAssertEqual(datagramsArrived, datagramsSent, "\(backend): every datagram relayed beside the stuck stream")
        }
    }

    /// Under a 4 KiB send buffer almost every send is partial: 1 MiB still arrives whole and in
    /// order, the writes refused at the high water mark resumed on `writable`.
    func testPartialWritesUnderASmallSendBufferKeepEveryByteInOrder() throws {
        for backend in ConformanceTests.backends {
            // Accepted sockets inherit the listener's buffer sizes.
            let echo = try StreamEchoHarness(backend: backend, listenerSetUp: { listener in
                var size: Int32 = 4096
                setsockopt(listener.descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            })
            let client = TCPClientFixture.connect(to: echo.server, receiveBuffer: 4096)
            defer { close(client) }
            XCTAssertTrue(echo.run(seconds: 5) { echo.accepted.count == 1 }, "\(backend)")
            let stream = echo.accepted[0]
            let total = 1 << 20
            let piece = 3_000  // never a divisor of the ring's size: writes wrap at every offset
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: piece, alignment: 8)
            let incoming = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
            defer {
                chunk.deallocate()
                incoming.deallocate()
            }
            var written = 0
            var received = 0
            var wrong = 0
            let done = echo.run(seconds: 10) {
                while written < total {
                    let count = min(piece, total - written)
                    for offset in 0..<count { chunk[offset] = TCPClientFixture.byte(client: 1, offset: written + offset) }
                    guard echo.engine.write(stream, UnsafeRawBufferPointer(rebasing: chunk[0..<count])) else { break }
                    written += count
                }
                while case .bytes(let bytes) = TCPClientFixture.receive(client, into: incoming) {
                    for offset in 0..<bytes where incoming[offset] != TCPClientFixture.byte(client: 1, offset: received + offset) { wrong += 1 }
                    received += bytes
                }
                return received == total
            }
            XCTAssertTrue(done, "\(backend): \(received) of \(total) bytes")
            XCTAssertEqual(wrong, 0, "\(backend): bytes out of order")
            XCTAssertGreaterThan(echo.engine.counters.streamWritesRefused, 0, "\(backend): the output filled")
            // io_uring's last send completion may come after the client has the bytes.
            XCTAssertTrue(echo.run(seconds: 2) { echo.engine.counters.streamBytesOut == UInt64(total) }, "\(backend)")
            XCTAssertEqual(echo.engine.outputPending(stream), 0, "\(backend)")
        }
    }

    /// Mid-message (half a frame sent), one peer closes and one resets: each close is reported
    /// with its reason, and a third connection beside them goes on echoing.
    func testAPeerThatClosesAndOneThatResetsMidMessage() throws {
        for backend in ConformanceTests.backends {
            let echo = try StreamEchoHarness(backend: backend, frame: 20)
            let closing = TCPClientFixture.connect(to: echo.server)
            let resetting = TCPClientFixture.connect(to: echo.server)
            let steady = TCPClientFixture.connect(to: echo.server)
            defer { close(steady) }
            XCTAssertTrue(echo.run(seconds: 5) { echo.accepted.count == 3 }, "\(backend)")
            let half = [UInt8](repeating: 7, count: 10)
            for fd in [closing, resetting, steady] {
                half.withUnsafeBytes { XCTAssertEqual(TCPClientFixture.send(fd, $0), .bytes(10)) }
            }
            XCTAssertTrue(echo.run(seconds: 5) { echo.engine.counters.streamBytesIn == 30 }, "\(backend)")
            close(closing)
            TCPClientFixture.reset(resetting)
            XCTAssertTrue(echo.run(seconds: 5) { echo.closed.count == 2 }, "\(backend)")
            let reasons = Set(echo.closed.values)
            XCTAssertEqual(reasons, [.peerClosed, .reset], "\(backend)")
            // The third completes its frame and gets all 20 bytes back.
            half.withUnsafeBytes { XCTAssertEqual(TCPClientFixture.send(steady, $0), .bytes(10)) }
            var back = 0
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
            defer { buffer.deallocate() }
            XCTAssertTrue(echo.run(seconds: 5) {
                if case .bytes(let bytes) = TCPClientFixture.receive(steady, into: buffer) { back += bytes }
                return back == 20
            }, "\(backend): \(back) bytes back")
            XCTAssertEqual(echo.closed.count, 2, "\(backend)")
            XCTAssertEqual(echo.strangers, 0, "\(backend)")
        }
    }

    /// 5,000 connects as fast as the kernel takes them, against 256 streams that their owner
    /// closes as soon as it sees them: every connection is accepted (past capacity the rest
    /// wait in the kernel's backlog, none is reset), within a bounded time, and the clients all
    /// see their end (and `tearDown` that every descriptor is closed).
    func testAnAcceptStormOfFiveThousandConnects() throws {
        for backend in ConformanceTests.backends {
            let started = MonotonicClock.now()
            let echo = try StreamEchoHarness(backend: backend, configure: { $0.streamLimit = 256 })
            let engine = echo.engine
            let total = 5_000
            var fds: [Int32] = []
            var closedByUs = 0
            func turnClosingNew() {
                echo.turn()
                for stream in echo.accepted[closedByUs...] { engine.close(stream, keepingOutput: false) }
                closedByUs = echo.accepted.count
            }
            for _ in 0..<total {
                fds.append(TCPClientFixture.connect(to: echo.server))
                if fds.count % 100 == 0 { turnClosingNew() }
            }
            let counted = {
                Int(engine.counters.streamsAccepted + engine.counters.streamsRefused)
            }
            let allSettled = echo.run(seconds: 15) {
                turnClosingNew()
                return counted() == total && echo.closed.count == Int(engine.counters.streamsAccepted)
            }
            XCTAssertTrue(allSettled, "\(backend): accepted \(engine.counters.streamsAccepted), refused \(engine.counters.streamsRefused), errors \(engine.counters.acceptErrors)")
            XCTAssertEqual(engine.counters.streamsAccepted, UInt64(total), "\(backend): connections reset past capacity")
            XCTAssertEqual(engine.counters.streamsRefused, 0, "\(backend)")
            XCTAssertEqual(Set(echo.closed.values), [.byOwner], "\(backend)")
            XCTAssertEqual(closedByUs, echo.accepted.count, "\(backend)")
            // Every client sees its connection end: a FIN (closed by the owner) or a reset (refused).
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 8)
            defer { buffer.deallocate() }
            var open = fds
            let clientsDeadline = MonotonicClock.now() + MonotonicClock.nanoseconds(5)
            while !open.isEmpty && MonotonicClock.now() < clientsDeadline {
                open.removeAll { fd in
                    switch TCPClientFixture.receive(fd, into: buffer) {
                    case .endOfStream, .failed: return true
                    default: return false
                    }
                }
                echo.turn(timeoutMilliseconds: 1)
            }
            XCTAssertEqual(open.count, 0, "\(backend): clients whose connection did not end")
            for fd in fds { close(fd) }
            echo.turn()
            echo.turn()
            XCTAssertEqual(engine.streamCount, 0, "\(backend)")
            print("\(backend): accept storm, \(engine.counters.streamsAccepted) accepted, \(engine.counters.streamsRefused) refused, in \((MonotonicClock.now() - started) / 1_000_000) ms")
        }
    }

    /// An owner that does not consume: the input fills, the engine stops reading (the client's
    /// sends back up into its own socket), nothing grows; once the owner consumes, every byte
    /// comes through in order.
    func testAnOwnerThatDoesNotConsumeStopsTheReading() throws {
        for backend in ConformanceTests.backends {
            // Small kernel buffers both ways, so that 1 MiB cannot hide in them.
            let echo = try StreamEchoHarness(backend: backend, listenerSetUp: { listener in
                var size: Int32 = 16_384
                setsockopt(listener.descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            })
            echo.echoing = false
            let client = TCPClientFixture.connect(to: echo.server, sendBuffer: 16_384)
            defer { close(client) }
            XCTAssertTrue(echo.run(seconds: 5) { echo.accepted.count == 1 }, "\(backend)")
            let total = 1 << 20
            let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
            let incoming = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
            defer {
                chunk.deallocate()
                incoming.deallocate()
            }
            var sent = 0
            func sendMore() {
                while sent < total {
                    let count = min(chunk.count, total - sent)
                    for offset in 0..<count { chunk[offset] = TCPClientFixture.byte(client: 2, offset: sent + offset) }
                    guard case .bytes(let bytes) = TCPClientFixture.send(client, UnsafeRawBufferPointer(rebasing: chunk[0..<count])) else { return }
                    sent += bytes
                }
            }
            for _ in 0..<200 {
                sendMore()
                echo.turn(timeoutMilliseconds: 1)
            }
            let capacity = echo.engine.configuration.streamInputBytes
            XCTAssertEqual(echo.engine.counters.streamBytesIn, UInt64(capacity), "\(backend): read exactly one full input, then stopped")
            XCTAssertEqual(echo.engine.input(echo.accepted[0]).count, capacity, "\(backend)")
            XCTAssertLessThan(sent, total, "\(backend): the client's sends backed up")
            // The owner consumes again: no new bytes come while the input is full, so it starts
            // from what waits there, and from then on the reading resumes.
            echo.echoing = true
            echo.echo(echo.accepted[0])
            var received = 0
            var wrong = 0
            let done = echo.run(seconds: 10) {
                sendMore()
                while case .bytes(let bytes) = TCPClientFixture.receive(client, into: incoming) {
                    for offset in 0..<bytes where incoming[offset] != TCPClientFixture.byte(client: 2, offset: received + offset) { wrong += 1 }
                    received += bytes
                }
                return received == total
            }
            XCTAssertTrue(done, "\(backend): \(received) of \(total)")
            XCTAssertEqual(wrong, 0, "\(backend)")
        }
    }

    /// A deadline closes its stream with `timeout`; an owner's close sends the pending output
    /// first (`byOwner`), or gives up at the linger time when the peer does not read
    /// (`timeout`); a close that drops the output is at once `byOwner`. Each peer sees its end.
    func testDeadlinesAndTheOwnersCloses() throws {
        for backend in ConformanceTests.backends {
            let echo = try StreamEchoHarness(backend: backend, configure: { $0.closeLingerMilliseconds = 100 }, listenerSetUp: { listener in
                var size: Int32 = 16_384
                setsockopt(listener.descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            })
            echo.echoing = false
            let engine = echo.engine
            let idle = TCPClientFixture.connect(to: echo.server)
            let reader = TCPClientFixture.connect(to: echo.server)
            let nonReader = TCPClientFixture.connect(to: echo.server, receiveBuffer: 4096)
            let dropped = TCPClientFixture.connect(to: echo.server)
            let clients = [idle, reader, nonReader, dropped]
            defer { for fd in clients { close(fd) } }
            XCTAssertTrue(echo.run(seconds: 5) { echo.accepted.count == 4 }, "\(backend)")
            // Match each stream to its client by the client's port.
            var streamOf: [Int32: SocketID] = [:]
            for index in 0..<4 {
                let port = TCPClientFixture.localPort(clients[index])
                for stream in echo.accepted where echo.peers[stream]?.port == port { streamOf[clients[index]] = stream }
            }
            XCTAssertEqual(streamOf.count, 4, "\(backend)")
            let payload = UnsafeMutableRawBufferPointer.allocate(byteCount: 60_000, alignment: 8)
            defer { payload.deallocate() }
            for offset in 0..<payload.count { payload[offset] = TCPClientFixture.byte(client: 3, offset: offset) }
            let started = MonotonicClock.now()
            engine.setDeadline(streamOf[idle]!, started + 50_000_000)
            for fd in [reader, nonReader, dropped] { XCTAssertTrue(engine.write(streamOf[fd]!, UnsafeRawBufferPointer(payload)), "\(backend)") }
            engine.close(streamOf[reader]!)
            engine.close(streamOf[nonReader]!)
            engine.close(streamOf[dropped]!, keepingOutput: false)
            XCTAssertFalse(engine.write(streamOf[reader]!, UnsafeRawBufferPointer(payload)), "\(backend): no writes after close")
            let incoming = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
            defer { incoming.deallocate() }
            var read = 0
            var readerEnded = false
            XCTAssertTrue(echo.run(seconds: 5) {
                while !readerEnded {
                    switch TCPClientFixture.receive(reader, into: incoming) {
                    case .bytes(let bytes): read += bytes
                    case .endOfStream: readerEnded = true
                    default: return false
                    }
                }
                return echo.closed.count == 4
            }, "\(backend): \(echo.closed)")
            let elapsed = (MonotonicClock.now() - started) / 1_000_000
            XCTAssertEqual(echo.closed[streamOf[idle]!], .timeout, "\(backend): the deadline")
            XCTAssertEqual(echo.closed[streamOf[reader]!], .byOwner, "\(backend): drained, then closed")
            XCTAssertEqual(echo.closed[streamOf[nonReader]!], .timeout, "\(backend): the linger time ran out")
            XCTAssertEqual(echo.closed[streamOf[dropped]!], .byOwner, "\(backend)")
            XCTAssertTrue(readerEnded && read == payload.count, "\(backend): the reader got \(read) bytes, then the end")
            XCTAssertGreaterThanOrEqual(elapsed, 90, "\(backend): the linger time was waited")
            XCTAssertLessThan(elapsed, 2_000, "\(backend)")
            // Every client sees its end: a FIN, or a reset for output dropped unread.
            for fd in [idle, nonReader, dropped] {
                var ended = false
                _ = echo.run(seconds: 2) {
                    while case .bytes = TCPClientFixture.receive(fd, into: incoming) {}
                    if case .wouldBlock = TCPClientFixture.receive(fd, into: incoming) { return false }
                    ended = true
                    return true
                }
                XCTAssertTrue(ended, "\(backend)")
            }
        }
    }

    /// A dual-stack listener takes IPv4 and IPv6 clients, each `accepted` with its peer and
    /// local address and the listener's tag; two SO_REUSEPORT listeners share one port.
    func testADualStackListenerAndReusePort() throws {
        try IPv6Loopback.require()  // IPv6 clients of the dual-stack listener
        for backend in ConformanceTests.backends {
            var configuration = EngineConfiguration(backend: backend)
            configuration.streamLimit = 8
            let engine = try DatagramEngine(configuration: configuration)
            let listener = try TCPListener(binding: Loopback.dualStack, options: ListenerOptions(reusePort: true))
            let sibling = try TCPListener(binding: Endpoint(host: "::", port: listener.localEndpoint.port)!, options: ListenerOptions(reusePort: true))
            let tag = OwnerTag(role: 4, index: 17)
            let listenerID = try engine.listen(listener, owner: tag)
            _ = try engine.listen(sibling, owner: tag)
            let port = listener.localEndpoint.port
            let v4 = TCPClientFixture.connect(to: Endpoint(host: "127.0.0.1", port: port)!)
            let v6 = TCPClientFixture.connect(to: Endpoint(host: "::1", port: port)!)
            defer {
                close(v4)
                close(v6)
            }
            var accepted: [StreamEvent] = []
            let deadline = MonotonicClock.now() + MonotonicClock.nanoseconds(5)
            while accepted.count < 2 && MonotonicClock.now() < deadline {
                engine.receive(timeoutMilliseconds: 10)
                for index in 0..<engine.streamEventCount { accepted.append(engine.streamEvent(index)) }
            }
            XCTAssertEqual(accepted.count, 2, "\(backend)")
            var peers: [Endpoint] = []
            for event in accepted {
                XCTAssertEqual(event.owner, tag, "\(backend)")
                guard case .accepted(let on, let peer, let local) = event.kind else { return XCTFail("\(backend): \(event)") }
                XCTAssertEqual(local.port, port, "\(backend)")
                XCTAssertEqual(local.isLoopback, true, "\(backend)")
                XCTAssertTrue(on == listenerID || engine.socketCount == 4, "\(backend)")
                peers.append(peer)
            }
            XCTAssertEqual(Set(peers.map(\.isIPv4)), [true, false], "\(backend): one IPv4 (mapped) and one IPv6 peer")
            XCTAssertEqual(Set(peers.map(\.port)), [TCPClientFixture.localPort(v4), TCPClientFixture.localPort(v6)], "\(backend)")
            engine.unregister(listenerID)
            XCTAssertEqual(engine.socketCount, 3, "\(backend): the other listener and the two streams")
        }
    }

    /// A datagram enqueued on a stream's identifier is refused (counted), never written into
    /// its byte stream; `unregister` of a stream closes it, and its owner hears nothing more.
    func testAStreamTakesNoDatagramsAndUnregisterClosesIt() throws {
        for backend in ConformanceTests.backends {
            let echo = try StreamEchoHarness(backend: backend)
            let client = TCPClientFixture.connect(to: echo.server)
            defer { close(client) }
            XCTAssertTrue(echo.run(seconds: 5) { echo.accepted.count == 1 }, "\(backend)")
            let stream = echo.accepted[0]
            let engine = echo.engine
            [UInt8](repeating: 1, count: 10).withUnsafeBytes { bytes in
                engine.enqueue(socket: stream, to: Loopback.v4, trafficClass: TrafficClass(rawValue: 0), bytes: bytes)
                engine.flush()
            }
            XCTAssertEqual(engine.counters.sendErrors.total, 1, "\(backend)")
            engine.unregister(stream)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
            defer { buffer.deallocate() }
            XCTAssertEqual(echo.receive(client, into: buffer), .endOfStream, "\(backend): the client saw a FIN and no stray bytes")
            echo.turn()
            XCTAssertEqual(engine.streamCount, 0, "\(backend)")
            XCTAssertEqual(echo.closed.count, 0, "\(backend): disowned, so its owner hears nothing")
            XCTAssertEqual(engine.counters.streamsClosed, 1, "\(backend)")
        }
    }

    /// Out of descriptors, a listener is paused rather than retried on every turn (which would
    /// spin the worker), and accepts what waited in the backlog once descriptors are back.
    func testAListenerOutOfDescriptorsPausesInsteadOfSpinning() throws {
        for backend in ConformanceTests.backends {
            let echo = try StreamEchoHarness(backend: backend)
            let engine = echo.engine
            // Connected before any turn: they wait in the backlog, and io_uring's accept, which
            // takes the descriptor limit as it stands when the accept is armed, is armed below
            // the lowered limit.
            let clients = (0..<10).map { _ in TCPClientFixture.connect(to: echo.server) }
            defer { for fd in clients { close(fd) } }
            var limit = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            let saved = limit
            // The limit bounds descriptor numbers: set it to the lowest free one, so that no
            // new descriptor fits below it.
            let lowestFree = dup(0)
            close(lowestFree)
            limit.rlim_cur = rlim_t(lowestFree)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            let syscallsBefore = engine.counters.syscalls
            var turns = 0
            let until = MonotonicClock.now() + 300_000_000
            while MonotonicClock.now() < until {
                echo.turn(timeoutMilliseconds: 50)
                turns += 1
            }
            var restored = saved
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &restored)
            XCTAssertEqual(echo.accepted.count, 0, "\(backend)")
            XCTAssertGreaterThan(engine.counters.acceptErrors, 0, "\(backend): the accept met EMFILE")
            XCTAssertLessThanOrEqual(engine.counters.acceptErrors, 8, "\(backend): about one try per 100 ms pause, not one per turn")
            XCTAssertLessThan(turns, 40, "\(backend): the turns waited instead of spinning")
            XCTAssertLessThan(engine.counters.syscalls - syscallsBefore, 200, "\(backend)")
            XCTAssertTrue(echo.run(seconds: 2) { echo.accepted.count == 10 }, "\(backend): \(echo.accepted.count) accepted after the pause")
        }
    }
}
