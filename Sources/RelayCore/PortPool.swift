import Synchronization

/// The relay's UDP port range, shared by every worker: session legs, forward-rule upstream
/// sockets and TURN relayed addresses take ports from it. Locked only when a socket is created
/// or closed, never per datagram. Ports are handed out round-robin so a port just released is
/// not reused at once (late datagrams of the old flow would reach the new one).
///
/// Forward-rule clients may hold at most half of the range, and TURN allocations at most half:
/// any host can create clients by sending from new source ports, and anyone with TURN
/// credentials can allocate; neither may leave sessions without ports.
public final class PortPool: Sendable {
    public enum Purpose: Sendable { case session, client, turn }

    public let range: ClosedRange<UInt16>
    /// The most ports forward-rule clients may hold at once.
    public let clientLimit: Int
    /// The most ports TURN relayed addresses (and their reservations) may hold at once.
    public let turnLimit: Int
    private struct State {
        var inUse: [Bool]
        var next: Int
        var used: Int
        var usedByClients: Int
        var usedByTURN: Int
    }
    private let state: Mutex<State>

    /// `turnLimit`: the most ports TURN may hold (half the range by default).
    public init(range: ClosedRange<UInt16>, turnLimit: Int? = nil) {
        self.range = range
        clientLimit = max(1, range.count / 2)
        self.turnLimit = max(1, min(turnLimit ?? range.count / 2, range.count))
        state = Mutex(State(inUse: Array(repeating: false, count: range.count), next: 0, used: 0,
                            usedByClients: 0, usedByTURN: 0))
    }

    /// A free port, or nil when every port of the range (or of the purpose's half) is taken.
    public func acquire(for purpose: Purpose = .session) -> UInt16? {
        state.withLock { state in
            guard state.used < state.inUse.count, PortPool.fits(purpose, 1, state, self) else { return nil }
            while state.inUse[state.next] { state.next = (state.next + 1) % state.inUse.count }
            let index = state.next
            PortPool.take(index, purpose, &state)
            state.next = (index + 1) % state.inUse.count
            return UInt16(Int(range.lowerBound) + index)
        }
    }

    /// An even port for TURN's EVEN-PORT (RFC 8656 section 7.2), and when `withNext` also the
    /// odd port above it, reserved for a later allocation; nil when no such port is free.
    public func acquireEven(withNext: Bool) -> UInt16? {
        state.withLock { state in
            let count = state.inUse.count
            guard PortPool.fits(.turn, withNext ? 2 : 1, state, self) else { return nil }
            for step in 0..<count {
                let index = (state.next + step) % count
                let port = Int(range.lowerBound) + index
                guard port % 2 == 0, !state.inUse[index] else { continue }
                if withNext { guard index + 1 < count, !state.inUse[index + 1] else { continue } }
                PortPool.take(index, .turn, &state)
                if withNext { PortPool.take(index + 1, .turn, &state) }
                state.next = (index + (withNext ? 2 : 1)) % count
                return UInt16(port)
            }
            return nil
        }
    }

    /// An even port whose odd successor is free too, both taken (an RTP port and its RTCP
    /// companion, RFC 3550 section 11), or nil when no such pair is left. Sessions only.
    public func acquirePair() -> UInt16? {
        state.withLock { state in
            let count = state.inUse.count
            let offset = Int(range.lowerBound) % 2  // index of the range's first even port
            let pairs = (count - offset) / 2
            guard pairs > 0, count - state.used >= 2 else { return nil }
            // Round-robin like single ports: start at the first pair at or after `next`.
            var pair = (max(state.next - offset, 0) + 1) / 2 % pairs
            for _ in 0..<pairs {
                let index = offset + pair * 2
                if !state.inUse[index] && !state.inUse[index + 1] {
                    state.inUse[index] = true
                    state.inUse[index + 1] = true
                    state.used += 2
                    state.next = (index + 2) % count
                    return UInt16(Int(range.lowerBound) + index)
                }
                pair = (pair + 1) % pairs
            }
            return nil
        }
    }

    public func release(_ port: UInt16, from purpose: Purpose = .session) {
        guard range.contains(port) else { return }
        state.withLock { state in
            let index = Int(port - range.lowerBound)
            if state.inUse[index] {
                state.inUse[index] = false
                state.used -= 1
                if purpose == .client { state.usedByClients -= 1 }
                if purpose == .turn { state.usedByTURN -= 1 }
            }
        }
    }

    public var available: Int { state.withLock { $0.inUse.count - $0.used } }

    /// Ports held now, by sessions, forward-rule clients and TURN together.
    public var held: Int { state.withLock { $0.used } }

    /// Ports TURN relayed addresses (and their reservations) hold now, of `turnLimit`.
    public var heldForTURN: Int { state.withLock { $0.usedByTURN } }

    /// Whether this relay holds `port` now.
    public func isHeld(_ port: UInt16) -> Bool {
        guard range.contains(port) else { return false }
        return state.withLock { $0.inUse[Int(port - range.lowerBound)] }
    }

    private static func fits(_ purpose: Purpose, _ count: Int, _ state: State, _ pool: PortPool) -> Bool {
        switch purpose {
        case .session: true
        case .client: state.usedByClients + count <= pool.clientLimit
        case .turn: state.usedByTURN + count <= pool.turnLimit
        }
    }

    private static func take(_ index: Int, _ purpose: Purpose, _ state: inout State) {
        state.inUse[index] = true
        state.used += 1
        if purpose == .client { state.usedByClients += 1 }
        if purpose == .turn { state.usedByTURN += 1 }
    }
}
