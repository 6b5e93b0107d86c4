import DatagramEngine
import Foundation
@testable import RelayCore
import NetAddress
import STUN
import Synchronization
import SystemSupport
import TestPorts
import XCTest

/// A TURN table on real loopback sockets, driven on the test's thread: clients and peers are
/// sockets of a second engine. Time is the harness's own (`advance`), so expiry tests never
/// sleep; only waiting for datagrams uses real time, with a generous deadline. With receive
/// timestamps on, the table's time is the monotonic clock instead, read at every pump as a
/// worker reads it every turn, so that datagrams' receive times and `now` compare.
final class TurnHarness: TurnTestNetwork {
    static let realm = "example.org"
    static let credentials = TurnCredentials(realm: TurnHarness.realm, users: [("alice", "secret"), ("bob", "hunter2")],
                                             secrets: ["rest-secret"])
    /// The relay side: one table on the test's engine, or (worker mode) whole workers.
    let relay: DatagramEngine!
    let table: TurnTable<DatagramEngine>!
    var workers: [Worker] = []
    let listener: Endpoint
    let sockets: DatagramEngine
    /// The relay's port range, claimed against every other test on the host.
    let ports: PortBlock
    /// The pool the table takes relayed ports from (nil in worker mode).
    let pool: PortPool!
    var now: UInt64 = 1_000 * 1_000_000_000
    /// Receive timestamps on: `now` follows `MonotonicClock`.
    let followsMonotonicClock: Bool
    /// Datagrams the client/peer sockets received, by socket, oldest first.
    var inbox: [SocketID: [(bytes: [UInt8], trafficClass: TrafficClass, source: Endpoint)]] = [:]

    /// The settings both harnesses start from: alice and bob, loopback peers allowed, relayed
    /// addresses on loopback (IPv6 too unless `ipv6` is false), nonces on the `wall` clock.
    static func settings(ipv6: Bool, wall: Clock, configure: (inout TurnSettings) -> Void) -> TurnSettings {
        var settings = TurnSettings(authenticator: TurnAuthenticator(credentials: credentials),
                                    peerPolicy: PeerPolicy(allowed: [AddressRange(parsing: "127.0.0.0/8")!,
                                                                     AddressRange(parsing: "::1/128")!]),
                                    relayIPv4: Endpoint(host: "127.0.0.1", port: 0)!,
                                    relayIPv6: ipv6 ? Endpoint(host: "::1", port: 0)! : nil)
        settings.wallClock = { wall.seconds.withLock { $0 } }
        configure(&settings)
        return settings
    }

    final class Clock: Sendable {
        let seconds = Mutex<UInt64>(1_700_000_000)
    }
    let wall = Clock()

    /// `turnPorts`: the most ports TURN may hold (the pool's default, half the range, when nil);
    /// `listenOn`: the listener's address (its clients must be of its family); `egress`: a cap;
    /// `timestamps`: the relay engine's receive timestamps, and the monotonic clock as `now`.
    init(backend: Backend = .mmsg, ports: PortBlock? = nil, ipv6: Bool = true, turnPorts: Int? = nil,
         listenOn: String = "127.0.0.1", egress: EgressBucket? = nil, timestamps: Bool = false,
         configure: (inout TurnSettings) -> Void = { _ in }) throws {
        let settings = TurnHarness.settings(ipv6: ipv6, wall: wall, configure: configure)
        self.ports = try ports ?? PortBlock()
        followsMonotonicClock = timestamps
        if timestamps { now = MonotonicClock.now() }
        relay = try DatagramEngine(configuration: EngineConfiguration(backend: backend, gso: false, receiveTimestamps: timestamps))
        pool = PortPool(range: self.ports.range, turnLimit: turnPorts)
        table = TurnTable(engine: relay, settings: settings, shared: TurnSharedState(limits: settings.limits),
                          ports: pool, clock: WorkerClock(now: now), egress: EgressShare(egress))
        table.shared.update(settings.alternates)
        listener = try table.openListeners(udp: [Endpoint(host: listenOn, port: 0)!])[0]
        sockets = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false))
    }

    /// Worker mode: `workers` relay workers whose TURN listeners share one port by SO_REUSEPORT.
    init(workers count: Int) throws {
        ports = try PortBlock()
        followsMonotonicClock = false
        // A free port for the shared listener: taken, noted, let go.
        listener = try UDPSocket(binding: Endpoint(host: "127.0.0.1", port: 0)!).localEndpoint
        var settings = RelaySettings(ports: ports.range, relayAddress: Endpoint(host: "127.0.0.1", port: 0)!)
        settings.engine = EngineConfiguration(backend: .mmsg)
        var turn = TurnSettings(authenticator: TurnAuthenticator(credentials: TurnCredentials(
                                    realm: TurnHarness.realm, users: [("alice", "secret"), ("bob", "hunter2")])),
                                peerPolicy: PeerPolicy(allowed: [AddressRange(parsing: "127.0.0.0/8")!]),
                                relayIPv4: Endpoint(host: "127.0.0.1", port: 0)!)
        let wall = self.wall
        turn.wallClock = { wall.seconds.withLock { $0 } }
        settings.turn = turn
        settings.turnListeners = [listener]
        relay = nil
        table = nil
        pool = nil
        workers = try (0..<count).map { try Worker(shared: WorkerShared(index: $0), settings: settings, ruleShares: []) }
        sockets = try DatagramEngine(configuration: EngineConfiguration(backend: .mmsg, gso: false))
    }

    deinit {
        table?.shutDown()
        for worker in workers { worker.shutDown() }
    }

    /// A client or peer socket on loopback (IPv4 unless `host` says otherwise).
    func socket(_ host: String = "127.0.0.1") throws -> (id: SocketID, address: Endpoint) {
        let socket = try UDPSocket(binding: Endpoint(host: host, port: 0)!)
        return (try sockets.register(socket), socket.localEndpoint)
    }

    /// Hands a datagram the relay received to the table by its owner tag, as a worker does.
    func route(_ datagram: ReceivedDatagram) {
        switch datagram.owner.socketRole {
        case .turnListener: table.fromClient(datagram)
        case .turnRelay: table.fromPeer(Int(datagram.owner.index), datagram)
        default: break
        }
    }

    /// Moves both clocks on: the table's monotonic one and the wall clock nonces go by.
    func advance(seconds: UInt64) {
        now += seconds * 1_000_000_000
        table?.clock.now = now
        wall.seconds.withLock { $0 += seconds }
    }

    func send(_ bytes: [UInt8], from socket: SocketID, to destination: Endpoint, trafficClass: TrafficClass = TrafficClass(rawValue: 0)) {
        bytes.withUnsafeBytes { sockets.enqueue(socket: socket, to: destination, trafficClass: trafficClass, bytes: $0) }
        sockets.flush()
    }

    /// One turn of the relay and of the test's sockets.
    func pump() {
        if let table {
            let count = relay.receive(timeoutMilliseconds: 1)
            if followsMonotonicClock { now = MonotonicClock.now() }
            table.clock.now = now
            for index in 0..<count { route(relay.received(index)) }
            relay.flush()
            table.flushed()
        }
        for worker in workers { worker.turn(timeoutMilliseconds: 1) }
        let arrived = sockets.receive(timeoutMilliseconds: 1)
        for index in 0..<arrived {
            let datagram = sockets.received(index)
            inbox[datagram.socket, default: []].append((Array(datagram.bytes), datagram.trafficClass, datagram.source))
        }
    }

    /// The next datagram `socket` receives, or nil after a generous deadline.
    func next(on socket: SocketID, seconds: Double = 5) -> (bytes: [UInt8], trafficClass: TrafficClass, source: Endpoint)? {
        let deadline = Date().addingTimeInterval(seconds)
        while inbox[socket, default: []].isEmpty && Date() < deadline { pump() }
        guard !inbox[socket, default: []].isEmpty else { return nil }
        return inbox[socket]!.removeFirst()
    }

    /// Pumps until nothing has arrived for a short while: for checking that nothing comes.
    func settle(on socket: SocketID) -> Int {
        for _ in 0..<50 { pump() }
        return inbox[socket, default: []].count
    }

    /// Sends a request and returns the parsed answer.
    func ask(_ bytes: [UInt8], from socket: SocketID) -> StunMessage? {
        send(bytes, from: socket, to: listener)
        guard let answer = next(on: socket) else { return nil }
        return try? StunMessage(bytes: answer.bytes)
    }
}

/// A TURN client's side of the long-term credential dance, for tests.
struct TurnTestClient {
    let harness: any TurnTestNetwork
    let socket: SocketID
    let address: Endpoint
    var username = "alice"
    var password = "secret"
    var nonce = ""
    var algorithm = PasswordAlgorithm.md5

    init(_ harness: any TurnTestNetwork, host: String = "127.0.0.1") throws {
        self.harness = harness
        (socket, address) = try harness.socket(host)
    }

    var key: [UInt8] {
        LongTermKey.derive(username: username, realm: TurnHarness.realm, password: password, algorithm: algorithm)
    }

    /// A request signed with the current nonce; `attributes` adds the method's own.
    func signed(_ method: Method, id: TransactionID = .random(), _ attributes: (inout MessageBuilder) -> Void = { _ in }) -> [UInt8] {
        var builder = MessageBuilder(MessageType(method, .request), transactionID: id)
        attributes(&builder)
        builder.append(.username, text: username)
        builder.append(.realm, text: TurnHarness.realm)
        builder.append(.nonce, text: nonce)
        if algorithm == .sha256 {
            builder.append(.passwordAlgorithms, [0, 2, 0, 0, 0, 1, 0, 0])
            builder.append(.passwordAlgorithm, [0, 2, 0, 0])
        }
        builder.appendIntegrity(algorithm == .md5 ? .messageIntegrity : .messageIntegritySHA256, key: key)
        builder.appendFingerprint()
        return builder.bytes
    }

    /// Sends a signed request; on 401 or 438 takes the new nonce and tries once more.
    mutating func ask(_ method: Method, _ attributes: (inout MessageBuilder) -> Void = { _ in }) -> StunMessage? {
        for _ in 0..<2 {
            guard let answer = harness.ask(signed(method, attributes), from: socket) else { return nil }
            let code = try? answer.value(.errorCode, AttributeValue.errorCode)?.code
            if (code == 401 || code == 438), let fresh = try? answer.text(.nonce), fresh != nonce {
                nonce = fresh
                continue
            }
            return answer
        }
        return nil
    }

    mutating func allocate(_ attributes: (inout MessageBuilder) -> Void = { _ in }) -> StunMessage? {
        ask(.allocate) { builder in
            builder.append(.requestedTransport, [17, 0, 0, 0])
            attributes(&builder)
        }
    }

    mutating func permit(_ peer: Endpoint) -> StunMessage? {
        ask(.createPermission) { $0.append(.xorPeerAddress, xorAddress: peer) }
    }

    mutating func bind(_ channel: UInt16, _ peer: Endpoint) -> StunMessage? {
        ask(.channelBind) { builder in
            builder.append(.channelNumber, [UInt8(channel >> 8), UInt8(channel & 0xFF), 0, 0])
            builder.append(.xorPeerAddress, xorAddress: peer)
        }
    }

    func send(_ bytes: [UInt8], trafficClass: TrafficClass = TrafficClass(rawValue: 0)) {
        harness.send(bytes, from: socket, to: harness.listener, trafficClass: trafficClass)
    }
}

extension StunMessage {
    var errorCode: Int? { (try? value(.errorCode, AttributeValue.errorCode))?.code }
    var errorReason: String? { (try? value(.errorCode, AttributeValue.errorCode))?.reason }
    var isSuccess: Bool { messageClass == .successResponse }
}

/// A Send indication to `peer` carrying `payload`.
func sendIndication(_ peer: Endpoint, _ payload: [UInt8]) -> [UInt8] {
    var builder = MessageBuilder(MessageType(.send, .indication), transactionID: .random())
    builder.append(.xorPeerAddress, xorAddress: peer)
    builder.append(.data, payload)
    return builder.bytes
}

/// Alice's allocation on `network` and a peer socket bound to her channel `number`.
func aliceWithChannel(_ number: UInt16, on network: any TurnTestNetwork) throws
    -> (client: TurnTestClient, relayed: Endpoint, peer: SocketID, peerAddress: Endpoint) {
    var client = try TurnTestClient(network)
    let relayed = try XCTUnwrap(client.allocate()?.xorAddress(.xorRelayedAddress))
    let (peer, peerAddress) = try network.socket("127.0.0.1")
    XCTAssertTrue(try XCTUnwrap(client.bind(number, peerAddress)).isSuccess)
    return (client, relayed, peer, peerAddress)
}

/// A ChannelData message on `channel` carrying `payload`.
func channelData(_ channel: UInt16, _ payload: [UInt8]) -> [UInt8] {
    [UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] + payload
}

extension TurnHarness {
    /// A harness whose peer policy allows loopback peers but knows the relay's own ports
    /// (`ports`), and two clients on it, alice and bob, each with their own credentials: the
    /// set-up of every test of the relay's own ports and of client-to-client relaying.
    static func withOwnPorts(_ ports: PortBlock) throws -> (TurnHarness, TurnTestClient, TurnTestClient) {
        let harness = try TurnHarness(ports: ports) {
            $0.peerPolicy = PeerPolicy(allowed: [AddressRange(parsing: "127.0.0.0/8")!], ownPorts: ports.range,
                                       relayAddresses: [Endpoint(host: "127.0.0.1", port: 0)!])
        }
        return (harness, try TurnTestClient(harness), try TurnTestClient.bob(harness))
    }
}

extension TurnTestClient {
    /// A client with the harness's second user's credentials.
    static func bob(_ harness: any TurnTestNetwork) throws -> TurnTestClient {
        var bob = try TurnTestClient(harness)
        bob.username = "bob"
        bob.password = "hunter2"
        return bob
    }
}
