@testable import DatagramEngine
@testable import RelayCore
import NetAddress

/// Session and forward-rule tables on an `InMemoryEngine`, for table logic only: the test
/// hands datagrams to a table as the worker would and reads what it queued. No socket, no
/// sleep: time is the clock's.
final class InMemoryTables {
    let engine = InMemoryEngine()
    let clock = WorkerClock(now: 1_000 * 1_000_000_000)
    let sessions: SessionTable<InMemoryEngine>
    let forwardRules: ForwardRuleTable<InMemoryEngine>
    /// The worker's share of the egress cap, used by both tables.
    let egress: EgressShare

    init(relayAddress: String = "10.0.0.1", rules: [ForwardRule] = [], offload: (any FlowOffload)?,
         configure: (inout RelaySettings) -> Void = { _ in }) throws {
        let address = Endpoint(host: relayAddress, port: 0)!
        var settings = RelaySettings(ports: 41_000...41_199, relayAddress: address, advertiseAddress: address)
        settings.rules = rules
        settings.fastPath = offload
        configure(&settings)
        let opener = PortOpener(engine: engine, ports: settings.ports, socketOptions: SocketOptions())
        egress = EgressShare(settings.egress)
        sessions = SessionTable(engine: engine, settings: settings, opener: opener, worker: 0, clock: clock, egress: egress)
        forwardRules = ForwardRuleTable(engine: engine, settings: settings, opener: opener, clock: clock, egress: egress)
        try forwardRules.openListeners(rules.map(RuleShared.init))
    }

    func advance(seconds: UInt64) { clock.now += seconds * 1_000_000_000 }

    /// A round of credit for the tables' kernel entries, as the worker runs every 20 ms.
    func creditRound() {
        egress.endTurn()
        CreditRound.run(sessions: sessions, forwardRules: forwardRules, turn: nil, egress: egress, now: clock.now,
                        thresholds: ECNThresholds())
    }

    /// One datagram from `source` to the relay's socket on `destination`, routed by its owner
    /// tag; what the table queued is flushed and returned.
    @discardableResult
    func send(_ payload: [UInt8], from source: Endpoint, to destination: Endpoint, ecn: ECN = .notECT) -> [InMemoryEngine.Datagram] {
        guard let (id, socket) = engine.socket(boundTo: destination) else { return [] }
        payload.withUnsafeBytes { bytes in
            let datagram = ReceivedDatagram(socket: id, owner: socket.owner, source: source, trafficClass: TrafficClass(dscp: 0, ecn: ecn),
                                            bytes: bytes, receivedAt: 0, localAddress: Endpoint(high: 0, low: 0, port: 0))
            let index = Int(socket.owner.index)
            switch socket.owner.socketRole {
            case .leg: sessions.fromLeg(index, datagram)
            case .listener: forwardRules.fromClient(index, datagram)
            case .upstream: forwardRules.fromUpstream(index, datagram)
            default: break
            }
        }
        engine.flush()
        return engine.takeSent()
    }
}
