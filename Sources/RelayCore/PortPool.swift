import Synchronization

/// The relay's UDP port range, shared by every worker: session legs and forward-rule upstream
/// sockets take ports from it. Locked only when a socket is created or closed, never per
/// datagram. Ports are handed out round-robin so a port just released is not reused at once
/// (late datagrams of the old flow would reach the new one).
public final class PortPool: Sendable {
    public let range: ClosedRange<UInt16>
    private struct State {
        var inUse: [Bool]
        var next: Int
        var used: Int
    }
    private let state: Mutex<State>

    public init(range: ClosedRange<UInt16>) {
        self.range = range
        state = Mutex(State(inUse: Array(repeating: false, count: range.count), next: 0, used: 0))
    }

    /// A free port, or nil when every port of the range is taken.
    public func acquire() -> UInt16? {
        state.withLock { state in
            guard state.used < state.inUse.count else { return nil }
            while state.inUse[state.next] { state.next = (state.next + 1) % state.inUse.count }
            state.inUse[state.next] = true
            state.used += 1
            let port = UInt16(Int(range.lowerBound) + state.next)
            state.next = (state.next + 1) % state.inUse.count
            return port
        }
    }

    public func release(_ port: UInt16) {
        guard range.contains(port) else { return }
        state.withLock { state in
            let index = Int(port - range.lowerBound)
            if state.inUse[index] {
                state.inUse[index] = false
                state.used -= 1
            }
        }
    }

    public var available: Int { state.withLock { $0.inUse.count - $0.used } }
}
