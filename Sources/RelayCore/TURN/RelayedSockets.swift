import DatagramEngine
import Glibc
import NetAddress
import STUN
import SystemSupport

/// The relayed sockets of one worker's allocations: bound from the TURN share of the port pool
/// (EVEN-PORT and its reserved odd port included), registered with the engine, and closed
/// after the flush that follows their allocation's end, their ports returned to the pool only
/// then. Every relayed port is in `TurnSharedState.relayedPorts` while its socket is open.
final class RelayedSockets<Engine: TableEngine> {
    /// How long a port reserved by EVEN-PORT's R bit waits for its RESERVATION-TOKEN.
    let reservationNanoseconds: UInt64 = 30_000_000_000

    private let engine: Engine
    private let settings: TurnSettings
    private let shared: TurnSharedState
    private let ports: PortPool
    private let socketOptions: SocketOptions
    private let clock: WorkerClock
    /// Relayed sockets of removed allocations, closed after the engine's next flush.
    private var closing: [RelayedSocket] = []

    init(engine: Engine, settings: TurnSettings, shared: TurnSharedState, ports: PortPool, socketOptions: SocketOptions,
         clock: WorkerClock) {
        self.engine = engine
        self.settings = settings
        self.shared = shared
        self.ports = ports
        self.socketOptions = socketOptions
        self.clock = clock
    }

    /// Gives back a port the pool handed out for a relayed socket that was never opened.
    func releasePort(_ port: UInt16) {
        ports.release(port, from: .turn)
    }

    /// EVEN-PORT: a relayed socket on an even port, and with the R bit the odd port above it
    /// reserved under a fresh token. Even ports another process holds are skipped.
    func openEven(_ family: AddressFamily, reserveNext: Bool,
                       dontFragment: Bool) throws(TurnRefusal) -> (RelayedSocket, UInt64?) {
        for _ in 0..<16 {
            guard let port = ports.acquireEven(withNext: reserveNext) else { break }
            let relay: RelayedSocket
            do throws(TurnRefusal) {
                relay = try open(family, port: port, dontFragment: dontFragment)
            } catch {
                if reserveNext { ports.release(port + 1, from: .turn) }
                continue
            }
            guard reserveNext else { return (relay, nil) }
            // The odd port is bound now, not when the token comes back: until then any other
            // process could take it, and the RTCP allocation would fail with 508.
            guard var next = bindAddress(family) else { break }
            next.port = port + 1
            guard let held = try? UDPSocket(binding: next, options: socketOptions) else {
                // Just opened, nothing queued on it yet: it can close at once.
                engine.unregister([relay.socket])
                shared.relayedPorts.remove(relay.port, ipv6: relay.ipv6)
                ports.release(relay.port, from: .turn)
                ports.release(port + 1, from: .turn)
                continue
            }
            let token = Digest.random(count: 8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            shared.reserve(port + 1, family: family, held: HeldPort(held), token: token, until: clock.now &+ reservationNanoseconds)
            return (relay, token)
        }
        throw TurnRefusal(code: .insufficientCapacity, cause: .noRelayedPort)
    }

    func bindAddress(_ family: AddressFamily) -> Endpoint? {
        family == .ipv4 ? settings.relayIPv4 : settings.relayIPv6
    }

    /// Binds a relayed socket of `family`: on `port` when given (already taken from the pool,
    /// and `held` already bound on it when a reservation kept it), else on a free port of the
    /// pool, skipping ports another process holds. 508 when none.
    func open(_ family: AddressFamily, port given: UInt16?, held: UDPSocket? = nil, dontFragment: Bool) throws(TurnRefusal) -> RelayedSocket {
        guard var local = bindAddress(family) else {
            throw TurnRefusal(code: .addressFamilyNotSupported, cause: .familyNotRelayed(family))
        }
        // A given port was chosen for this allocation: tried once, never swapped for another.
        let result = ports.bindSkippingHeld(for: .turn, attempts: given == nil ? 16 : 1, take: { given ?? ports.acquire(for: .turn) }) {
            (port: UInt16) throws(SystemCallError) -> RelayedSocket in
            local.port = port
            let socket = if let held {
                try engine.adoptDatagramSocket(held, owner: .unowned, dontFragment: dontFragment)
            } else {
                try engine.openDatagramSocket(binding: local, options: socketOptions, owner: .unowned, dontFragment: dontFragment).socket
            }
            var advertised = (family == .ipv4 ? settings.advertiseIPv4 : settings.advertiseIPv6) ?? local
            advertised.port = port
            shared.relayedPorts.insert(port, ipv6: family == .ipv6)
            return RelayedSocket(socket: socket, port: port, advertised: advertised)
        }
        switch result {
        case .success(let relay): return relay
        case .failure(.exhausted): throw TurnRefusal(code: .insufficientCapacity, cause: .noRelayedPort)
        case .failure(.failed(let error)): throw TurnRefusal(code: .insufficientCapacity, cause: .relayedBindFailed(error))
        }
    }

    /// Stops routing `relay`'s datagrams at once (this turn's included) and queues it for
    /// closing: datagrams of this batch may still be queued on it, so it closes after the
    /// flush (`closePending`).
    func retire(_ relay: RelayedSocket) {
        engine.disown(relay.socket)
        closing.append(relay)
    }

    /// Closes the sockets of removed allocations (all at once), then returns their ports: no
    /// port is handed out again while its socket is open.
    func closePending() {
        guard !closing.isEmpty else { return }
        engine.unregister(closing.map(\.socket))
        for relay in closing {
            shared.relayedPorts.remove(relay.port, ipv6: relay.ipv6)
            ports.release(relay.port, from: .turn)
        }
        closing.removeAll()
    }

    /// Returns the ports of reservations whose token did not come back in time.
    func expireReservations(now: UInt64) {
        for port in shared.expireReservations(now: now) { ports.release(port, from: .turn) }
    }
}
