import STUN
import Synchronization

/// What TURN state every worker shares, locked only on the control path (Allocate, expiry):
/// allocations per user and in total (quotas), and the ports reserved by EVEN-PORT's R bit,
/// whose RESERVATION-TOKEN may come back on another worker (another client 5-tuple).
public final class TurnShared: Sendable {
    private struct State {
        var total = 0
        var perUser: [String: Int] = [:]
        var reservations: [UInt64: (port: UInt16, family: AddressFamily, expires: UInt64)] = [:]
    }
    private let state = Mutex(State())
    /// TURN's relayed ports, for the peer policy's question "is this another allocation?".
    public let relayedPorts = RelayedPorts()

    public init() {}

    /// Counts a new allocation for `user` unless a quota says no: 486 per user, 508 in total.
    func admit(_ user: String, perUser: Int, total: Int) -> ErrorCode? {
        state.withLock { state in
            if total > 0 && state.total >= total { return .insufficientCapacity }
            if perUser > 0 && state.perUser[user, default: 0] >= perUser { return .allocationQuotaReached }
            state.total += 1
            state.perUser[user, default: 0] += 1
            return nil
        }
    }

    func release(_ user: String) {
        state.withLock { state in
            state.total -= 1
            let left = state.perUser[user, default: 1] - 1
            state.perUser[user] = left > 0 ? left : nil
        }
    }

    public var allocations: Int { state.withLock { $0.total } }

    func reserve(_ port: UInt16, family: AddressFamily, token: UInt64, until expires: UInt64) {
        state.withLock { $0.reservations[token] = (port, family, expires) }
    }

    /// The port a token reserved and its family (the allocation that redeems it gets the same
    /// family as the one that reserved it), taken out of the table: a token is used once.
    func redeem(_ token: UInt64) -> (port: UInt16, family: AddressFamily)? {
        state.withLock { $0.reservations.removeValue(forKey: token).map { ($0.port, $0.family) } }
    }

    /// Reservations past their time, removed; the caller returns their ports to the pool.
    func expireReservations(now: UInt64) -> [UInt16] {
        state.withLock { state in
            let expired = state.reservations.filter { $0.value.expires <= now }
            for token in expired.keys { state.reservations[token] = nil }
            return expired.values.map(\.port)
        }
    }
}
