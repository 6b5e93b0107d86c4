import DatagramEngine
@testable import RelayCore
import NetAddress
import STUN
import Synchronization
import XCTest

/// What a TURN test client needs of the network it talks over: the real one
/// (`TurnHarness`, loopback sockets) or the in-memory one (`InMemoryTurnHarness`).
protocol TurnTestNetwork: AnyObject {
    /// The TURN listener's address.
    var listener: Endpoint { get }
    /// A client or peer socket (IPv4 unless `host` says otherwise).
    func socket(_ host: String) throws -> (id: SocketID, address: Endpoint)
    func send(_ bytes: [UInt8], from socket: SocketID, to destination: Endpoint, trafficClass: TrafficClass)
    /// Sends a request and returns the parsed answer.
    func ask(_ bytes: [UInt8], from socket: SocketID) -> StunMessage?
}

/// A TURN table on an `InMemoryEngine`, driven on the test's thread, for table logic only:
/// a datagram a test sends is handed to the table at once as the worker would (by the owner
/// tag of the socket it is addressed to), the engine is flushed, and what the table sent is
/// delivered to the test's sockets, or back to the table when it is addressed to one of its
/// own (client to client through the relay). No socket, no sleep: time is `advance`'s.
final class InMemoryTurnHarness: TurnTestNetwork {
    let engine = InMemoryEngine()
    let table: TurnTable<InMemoryEngine>
    let listener: Endpoint
    private let listenerSocket: SocketID
    /// The pool the table takes relayed ports from; nothing in the kernel is bound.
    let pool: PortPool
    var now: UInt64 = 1_000 * 1_000_000_000
    let wall = TurnHarness.Clock()
    /// Datagrams the test's sockets received, by socket, oldest first.
    var inbox: [SocketID: [(bytes: [UInt8], trafficClass: TrafficClass, source: Endpoint)]] = [:]
    private var testSockets: [SocketID: Endpoint] = [:]
    private var nextTestSlot: Int32 = 1_000_000
    private var nextTestPort: UInt16 = 50_000

    /// `portCount` ports from 40000 for relayed sockets (`turnPorts` of them for TURN at most,
    /// the pool's default when nil); `listenOn`: the listener's address.
    init(ipv6: Bool = true, portCount: Int = 100, turnPorts: Int? = nil, listenOn: String = "127.0.0.1",
         offload: InMemoryOffload? = nil, configure: (inout TurnSettings) -> Void = { _ in }) throws {
        let settings = TurnHarness.settings(ipv6: ipv6, wall: wall, configure: configure)
        pool = PortPool(range: 40_000...UInt16(40_000 + portCount - 1), turnLimit: turnPorts)
        table = TurnTable(engine: engine, settings: settings, shared: TurnSharedState(limits: settings.limits),
                          ports: pool, clock: WorkerClock(now: now), offload: offload)
        table.shared.update(settings.alternates)
        listener = try table.openListeners(udp: [Endpoint(host: listenOn, port: 3478)!])[0]
        listenerSocket = try XCTUnwrap(engine.socket(boundTo: listener)).id
    }

    deinit { table.shutDown() }

    /// A round of credit for the table's kernel entries, as the worker runs every 20 ms.
    func creditRound() {
        table.clock.now = now
        CreditRound.run(sessions: nil, forwardRules: nil, turn: table, egress: table.packets.egress, now: now,
                        thresholds: ECNThresholds())
    }

    /// How many datagrams the table has queued and not yet flushed.
    var queuedCount: Int { engine.queuedCount }

    func socket(_ host: String = "127.0.0.1") throws -> (id: SocketID, address: Endpoint) {
        let id = SocketID(slot: nextTestSlot, generation: 1)
        let address = try XCTUnwrap(Endpoint(host: host, port: nextTestPort))
        nextTestSlot += 1
        nextTestPort += 1
        testSockets[id] = address
        return (id, address)
    }

    /// Moves both clocks on: the table's monotonic one and the wall clock nonces go by.
    func advance(seconds: UInt64) {
        now += seconds * 1_000_000_000
        table.clock.now = now
        wall.seconds.withLock { $0 += seconds }
    }

    func send(_ bytes: [UInt8], from socket: SocketID, to destination: Endpoint, trafficClass: TrafficClass = TrafficClass(rawValue: 0)) {
        guard let source = testSockets[socket] else { return XCTFail("not a socket of this harness") }
        deliver(bytes, from: source, to: destination, trafficClass: trafficClass)
        relayTurn()
    }

    /// One datagram to the relay's socket on `destination`, routed by its owner tag as a worker
    /// routes it; a datagram to an address the relay has no socket on goes nowhere.
    private func deliver(_ bytes: [UInt8], from source: Endpoint, to destination: Endpoint, trafficClass: TrafficClass) {
        guard let (id, socket) = engine.socket(boundTo: destination) else { return }
        table.clock.now = now
        bytes.withUnsafeBytes { bytes in
            switch socket.owner.socketRole {
            case .turnListener:
                table.fromClient(TurnClient(socket: id, address: source), bytes, trafficClass, receivedAt: 0)
            case .turnRelay:
                table.fromPeer(Int(socket.owner.index), source, bytes, trafficClass, receivedAt: 0)
            default:
                break  // unowned: a socket being closed
            }
        }
    }

    /// The flush that ends a worker's turn, and what it sent delivered, until nothing is left.
    private func relayTurn() {
        while true {
            engine.flush()
            table.flushed()
            let sent = engine.takeSent()
            guard !sent.isEmpty else { return }
            for datagram in sent {
                guard let source = engine.sockets[datagram.socket]?.local else { continue }
                if let (id, _) = testSockets.first(where: { $0.value == datagram.destination }) {
                    inbox[id, default: []].append((datagram.bytes, datagram.trafficClass, source))
                } else {
                    deliver(datagram.bytes, from: source, to: datagram.destination, trafficClass: datagram.trafficClass)
                }
            }
        }
    }

    /// The next datagram `socket` has received, or nil when none has: nothing is in flight.
    func next(on socket: SocketID) -> (bytes: [UInt8], trafficClass: TrafficClass, source: Endpoint)? {
        guard !inbox[socket, default: []].isEmpty else { return nil }
        return inbox[socket]!.removeFirst()
    }

    /// How many datagrams `socket` holds (everything sent has arrived already).
    func settle(on socket: SocketID) -> Int { inbox[socket, default: []].count }

    func ask(_ bytes: [UInt8], from socket: SocketID) -> StunMessage? {
        send(bytes, from: socket, to: listener)
        guard let answer = next(on: socket) else { return nil }
        return try? StunMessage(bytes: answer.bytes)
    }
}

extension InMemoryTurnHarness {
    /// A harness, alice's allocation and a peer socket bound to her channel `number`: the
    /// set-up of the tests of a channel's data path.
    static func withChannel(_ number: UInt16) throws
        -> (harness: InMemoryTurnHarness, client: TurnTestClient, relayed: Endpoint, peer: SocketID, peerAddress: Endpoint) {
        let harness = try InMemoryTurnHarness()
        let channel = try aliceWithChannel(number, on: harness)
        return (harness, channel.client, channel.relayed, channel.peer, channel.peerAddress)
    }
}
