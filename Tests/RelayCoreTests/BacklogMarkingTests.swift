import DatagramEngine
@testable import RelayCore
import NetAddress
import XCTest

/// Marking by backlog: a datagram that waited in a worker's socket queue past the L4S
/// threshold leaves CE if it came ECT(1), past the classic one if it came ECT(0); Not-ECT and
/// CE leave as they came, DSCP untouched. The waits are real (the test sleeps while the
/// datagrams sit in the relay's sockets), against thresholds far apart (20 ms and 200 ms), so
/// a busy machine cannot blur which side of them a wait falls on. Counted as `backlog` per leg,
/// per allocation and per worker; nothing with the session's, the allocation's or the relay's
/// marking off, or without receive timestamps.
final class BacklogMarkingTests: XCTestCase {
    static let thresholds = BacklogThresholds(l4sMicroseconds: 20_000, classicMicroseconds: 200_000)
    /// One datagram of each codepoint, each with a DSCP of its own.
    static let sent = [TrafficClass(dscp: 46, ecn: .ect1), TrafficClass(dscp: 34, ecn: .ect0),
                       TrafficClass(dscp: 10, ecn: .notECT), TrafficClass(dscp: 26, ecn: .ce)]
    static func ce(_ marking: TrafficClass) -> TrafficClass { TrafficClass(dscp: marking.dscp, ecn: .ce) }

    func testASessionMarksByTheWaitOfEachCodepoint() throws {
        for backend in [Backend.perPacket, .mmsg, .uring] {
            let relay = try SessionRelay(backend: backend)
            XCTAssertEqual(relay.forward(waiting: 0), Self.sent, "\(backend): no wait, no mark")
            XCTAssertEqual(relay.forward(waiting: 60_000), [Self.ce(Self.sent[0])] + Self.sent[1...],
                           "\(backend): past the L4S threshold only ECT(1) is marked")
            XCTAssertEqual(relay.forward(waiting: 260_000), [Self.ce(Self.sent[0]), Self.ce(Self.sent[1])] + Self.sent[2...],
                           "\(backend): past the classic threshold ECT(0) too")
            let counters = try XCTUnwrap(relay.worker.sessions.describe("s-backlog")).legs[0].counters
            XCTAssertEqual(counters.ceMarked[.backlog], 3, "\(backend): counted on the leg the datagrams came to")
            XCTAssertEqual(counters.ceMarked.total, 3)
            relay.worker.publish()
            XCTAssertEqual(relay.worker.shared.published.withLock { $0 }.ceMarks[.backlog], 3, "\(backend): and for the worker")
            relay.worker.shutDown()
        }
    }

    func testNothingIsMarkedWithTheSessionsMarkingOffOrWithoutTimestamps() throws {
        let off = try SessionRelay(backend: .mmsg, sessionMarking: false)
        XCTAssertEqual(off.forward(waiting: 260_000), Self.sent, "the session's ecn_marking off")
        off.worker.shutDown()
        let unstamped = try SessionRelay(backend: .mmsg, timestamps: false)
        XCTAssertEqual(unstamped.forward(waiting: 260_000), Self.sent, "receive timestamps off")
        unstamped.worker.publish()
        XCTAssertEqual(unstamped.worker.shared.published.withLock { $0 }.ceMarks.total, 0)
        unstamped.worker.shutDown()
    }

    func testAForwardRuleMarksAsTheRelaysMarkingSays() throws {
        for marking in [true, false] {
            let relay = try SessionRelay(backend: .uring, relayMarking: marking)
            let forwarded = relay.forwardThroughRule(waiting: 260_000)
            XCTAssertEqual(forwarded, marking ? [Self.ce(Self.sent[0]), Self.ce(Self.sent[1])] + Self.sent[2...] : Self.sent,
                           "--ecn-marking \(marking ? "on" : "off")")
            XCTAssertEqual(relay.worker.forwardRules.marks[.backlog], marking ? 2 : 0)
            relay.worker.shutDown()
        }
    }

    func testATurnAllocationMarksBothWays() throws {
        for marking in [true, false] {
            let harness = try TurnHarness(backend: .uring, timestamps: true) { $0.backlogThresholds = Self.thresholds }
            harness.table.shared.setECNMarking(marking)
            var client = try TurnTestClient(harness)
            let relayed = try XCTUnwrap(client.allocate()?.xorAddress(.xorRelayedAddress))
            let (peer, peerAddress) = try harness.socket()
            XCTAssertTrue(try XCTUnwrap(client.bind(0x4000, peerAddress)).isSuccess)
            let expected = marking ? [Self.ce(Self.sent[0]), Self.ce(Self.sent[1])] + Self.sent[2...] : Self.sent

            for (index, marking) in Self.sent.enumerated() { client.send(channelData(0x4000, [UInt8(index)]), trafficClass: marking) }
            usleep(260_000)
            let atPeer = (0..<4).compactMap { _ in harness.next(on: peer) }.sorted { $0.bytes[0] < $1.bytes[0] }
            XCTAssertEqual(atPeer.map(\.trafficClass), expected, "client to peer, marking \(marking)")

            for (index, marking) in Self.sent.enumerated() { harness.send([UInt8(index)], from: peer, to: relayed, trafficClass: marking) }
            usleep(260_000)
            let atClient = (0..<4).compactMap { _ in harness.next(on: client.socket) }.sorted { $0.bytes.last! < $1.bytes.last! }
            XCTAssertEqual(atClient.map(\.trafficClass), expected, "peer to client, marking \(marking)")

            let allocation = try XCTUnwrap(harness.table.describeAllocations(limit: 1, worker: 0).first)
            XCTAssertEqual(allocation.counters.ceMarked[.backlog], marking ? 4 : 0)
            XCTAssertEqual(harness.table.counters.ceMarks[.backlog], marking ? 4 : 0)
        }
    }
}

/// A worker on this thread with one two-leg session (both legs latched) and one forward rule,
/// and the peers' sockets in an engine of their own; the relay's thresholds are the test's.
private final class SessionRelay {
    let worker: Worker
    let peers: DatagramEngine
    let a: SocketID, b: SocketID, upstream: SocketID
    let legA: Endpoint, listen: Endpoint

    init(backend: Backend, timestamps: Bool = true, sessionMarking: Bool = true, relayMarking: Bool = true) throws {
        peers = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false, gro: false))
        a = try peers.register(UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!))
        let bSocket = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!)
        b = try peers.register(bSocket)
        let upstreamSocket = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!)
        upstream = try peers.register(upstreamSocket)
        listen = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint
        var settings = RelaySettings(ports: 43700...43799, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.engine = EngineConfiguration(backend: backend, gso: false, gro: false, receiveTimestamps: timestamps)
        settings.backlogThresholds = BacklogMarkingTests.thresholds
        settings.ecnMarking = relayMarking
        settings.rules = [ForwardRule(listen: listen, upstream: upstreamSocket.localEndpoint)]
        worker = try Worker(shared: WorkerShared(index: 0), settings: settings, ruleShares: settings.rules.map(RuleShared.init))
        var request = SessionRequest()
        request.ecnMarking = sessionMarking
        guard case .success(let session) = worker.sessions.create(request, id: "s-backlog") else { throw SessionRelayError() }
        legA = session.legs[0].address
        // Latch leg B on b, leg A on a: from then on a's datagrams go to b.
        _ = exchange(from: b, to: session.legs[1].address, waiting: 0, expecting: 0, at: a)
        _ = exchange(from: a, to: legA, waiting: 0, expecting: 0, at: b)
    }

    /// One datagram of each of BacklogMarkingTests.sent from a through the session after
    /// `waiting` microseconds in the relay's socket: the markings b got, in the order sent.
    func forward(waiting: useconds_t) -> [TrafficClass] {
        exchange(from: a, to: legA, waiting: waiting, expecting: 4, at: b)
    }

    /// The same from b through the forward rule to its upstream.
    func forwardThroughRule(waiting: useconds_t) -> [TrafficClass] {
        exchange(from: b, to: listen, waiting: waiting, expecting: 4, at: upstream)
    }

    private func exchange(from: SocketID, to destination: Endpoint, waiting: useconds_t, expecting: Int, at receiver: SocketID) -> [TrafficClass] {
        for (index, marking) in BacklogMarkingTests.sent.enumerated() where expecting > 0 || index == 0 {
            [UInt8(index)].withUnsafeBytes { peers.enqueue(socket: from, to: destination, trafficClass: marking, bytes: $0) }
        }
        peers.flush()
        usleep(waiting)
        var arrived: [(UInt8, TrafficClass)] = []
        // A latching datagram may reach nobody: a few turns, then on.
        for turn in 0..<100 where expecting == 0 ? turn < 5 : arrived.count < expecting {
            worker.turn(timeoutMilliseconds: 5)
            let count = peers.receive(timeoutMilliseconds: 5)
            for index in 0..<count where peers.received(index).socket == receiver {
                arrived.append((peers.received(index).bytes[0], peers.received(index).trafficClass))
            }
        }
        return arrived.sorted { $0.0 < $1.0 }.map(\.1)
    }
}

private struct SessionRelayError: Error {}
