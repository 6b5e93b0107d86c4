import Synchronization

/// The relay's UDP port range, shared by every worker: session legs and forward-rule upstream
/// sockets take ports from it. Locked only when a socket is created or closed, never per
/// datagram. Ports are handed out round-robin so a port just released is not reused at once
/// (late datagrams of the old flow would reach the new one).
///
/// Forward-rule clients may hold at most half of the range: any host can create clients by
/// sending from new source ports, and must not be able to leave sessions without ports.
public final class PortPool: Sendable {
    public enum Purpose: Sendable { case session, client }

    public let range: ClosedRange<UInt16>
    /// The most ports forward-rule clients may hold at once.
    public let clientLimit: Int
    private struct State {
        var inUse: [Bool]
        var next: Int
        var used: Int
        var usedByClients: Int
    }
    private let state: Mutex<State>

    public init(range: ClosedRange<UInt16>) {
        self.range = range
        clientLimit = max(1, range.count / 2)
        state = Mutex(State(inUse: Array(repeating: false, count: range.count), next: 0, used: 0, usedByClients: 0))
    }

    /// A free port, or nil when every port of the range (or of the clients' half) is taken.
    public func acquire(for purpose: Purpose = .session) -> UInt16? {
        state.withLock { state in
            guard state.used < state.inUse.count else { return nil }
            if purpose == .client {
                guard state.usedByClients < clientLimit else { return nil }
                state.usedByClients += 1
            }
            while state.inUse[state.next] { state.next = (state.next + 1) % state.inUse.count }
            state.inUse[state.next] = true
            state.used += 1
            let port = UInt16(Int(range.lowerBound) + state.next)
            state.next = (state.next + 1) % state.inUse.count
            return port
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
            }
        }
    }

    public var available: Int { state.withLock { $0.inUse.count - $0.used } }

    /// Ports held now, by sessions and forward-rule clients together.
    public var held: Int { state.withLock { $0.used } }

    /// Whether this relay holds `port` now.
    public func isHeld(_ port: UInt16) -> Bool {
        guard range.contains(port) else { return false }
        return state.withLock { $0.inUse[Int(port - range.lowerBound)] }
    }
}
