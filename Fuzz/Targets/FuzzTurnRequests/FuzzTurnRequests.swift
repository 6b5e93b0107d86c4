import DatagramEngine
import FuzzSupport
import NetAddress
@testable import RelayCore
import STUN
import Synchronization

/// The TURN table driven through the in-memory engine (InMemoryEngine.swift is a link to the
/// RelayCore tests' own): each input is a run of steps (`TurnStep`) from three clients and
/// three peers, among them requests signed with a valid key and a fresh nonce, so the handlers
/// behind authentication are reached. After every step the table's invariants are checked
/// (`TurnTableInvariants`) and every datagram it sent is judged (`TurnAnswers`).
func fuzzTurnRequests(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(data, count)
    let run = TurnRun()
    defer { run.table.shutDown() }
    var steps = 0
    while !input.rest.isEmpty && steps < 64 {
        run.step(&input)
        steps += 1
    }
    return 0
}

/// One table and its surroundings, made afresh for each input so that runs do not depend on
/// each other.
final class TurnRun {
    static let realm = "fuzz.test"
    static let key = LongTermKey.derive(username: "alice", realm: realm, password: "secret", algorithm: .md5)
    static let clients = (0..<3).map { Endpoint(host: "127.0.0.1", port: 5_000 + UInt16($0))! }
    static let peers = (0..<3).map { Endpoint(host: "127.0.0.1", port: 6_000 + UInt16($0))! }
    /// A few transaction IDs, so that retransmissions and replays come up.
    static let transactions = (0..<4).map { TransactionID(high: 0x4655_5A5A, low: UInt64($0)) }

    let engine = InMemoryEngine()
    let table: TurnTable<InMemoryEngine>
    let pool = PortPool(range: 40_000...40_015)
    let wall = WallClock()
    let listener: SocketID
    var now: UInt64 = 1_000 * 1_000_000_000
    var answers = TurnAnswers()

    init() {
        var settings = TurnSettings(
            authenticator: TurnAuthenticator(credentials: TurnCredentials(realm: Self.realm, users: [("alice", "secret")]),
                                             nonces: NonceIssuer(key: Array(repeating: 7, count: 32))),
            peerPolicy: PeerPolicy(allowed: [AddressRange(parsing: "127.0.0.0/8")!]),
            relayIPv4: Endpoint(host: "127.0.0.1", port: 0)!, relayIPv6: Endpoint(host: "::1", port: 0)!)
        let wall = self.wall
        settings.wallClock = { wall.seconds.load(ordering: .relaxed) }
        settings.maxAllocations = 4
        settings.maxAllocationsPerUser = 3
        settings.maxPermissions = 4
        table = TurnTable(engine: engine, settings: settings, shared: TurnSharedState(limits: settings.limits, acceptedAllocates: 8),
                          ports: pool, clock: WorkerClock(now: now))
        let address = try! table.openListeners(udp: [Endpoint(host: "127.0.0.1", port: 3478)!])[0]
        listener = engine.socket(boundTo: address)!.id
    }

    func step(_ input: inout FuzzInput) {
        let step = TurnStep(&input, nonceFor: { self.table.settings.authenticator.nonces.issue(for: $0, at: self.wall.seconds.load(ordering: .relaxed)) })
        table.clock.now = now
        switch step {
        case .fromClient(let client, let bytes):
            answers.sent(bytes, by: Self.clients[client])
            bytes.withUnsafeBytes { table.fromClient(TurnClient(socket: listener, address: Self.clients[client]), $0, TrafficClass(rawValue: 0), receivedAt: 0) }
        case .fromPeer(let peer, let allocation, let bytes):
            let live = table.store.liveIndices
            guard !live.isEmpty else { return }
            bytes.withUnsafeBytes { table.fromPeer(live[allocation % live.count], Self.peers[peer], $0, TrafficClass(rawValue: 0), receivedAt: 0) }
        case .wait(let seconds):
            now += seconds * 1_000_000_000
            wall.seconds.add(seconds, ordering: .relaxed)
            table.clock.now = now
            table.expire()
        }
        engine.flush()
        table.flushed()
        for datagram in engine.takeSent() { answers.judge(datagram.bytes, to: datagram.destination, clients: Self.clients) }
        TurnTableInvariants.check(table, pool: pool)
    }
}

final class WallClock: Sendable {
    let seconds = Atomic<UInt64>(1_700_000_000)
}
