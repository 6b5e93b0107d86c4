import Synchronization

/// The relay-wide egress cap (`--egress-rate`): one bucket of bytes per second that every
/// worker's sends draw on, standing for the operator's uplink, so that past it the relay
/// marks and drops by its own rules instead of a router queue further on dropping blindly.
///
/// Shared without a lock: the bucket is a single atomic, GCRA's "theoretical arrival time"
/// (the monotonic nanosecond at which the bucket would be full again; behind `now`: full). A
/// worker takes credit a chunk at a time with one compare-exchange and spends it per datagram
/// on its own (`EgressShare`), giving back what its turn left unspent; so the atomic is touched
/// about twice per turn, never per datagram, and the workers together may run ahead of the cap
/// by at most one chunk each.
///
/// - chunk: 1 ms of the rate; a datagram larger than that takes what it needs, so at low rates
///   the chunk (whose own use the marks count) never grows to a sizeable part of the burst.
/// - burst (depth): 100 ms of the rate, the queue an uplink's router would hold, not the second
///   of burst a session's own limit allows; at least two largest datagrams.
public final class EgressBucket: Sendable {
    /// Bytes (UDP payload, as in bytes_out) per second.
    public let rate: UInt64
    let chunkBytes: UInt64
    let depthNanoseconds: UInt64
    private let fullAt = Atomic<UInt64>(0)

    static let depth: UInt64 = 100_000_000

    /// A full bucket of `rate` bytes per second (> 0); `largestDatagram` is the relay's
    /// --max-datagram-size.
    public init(rate: UInt64, largestDatagram: Int) {
        precondition(rate > 0, "an egress bucket needs a rate")
        self.rate = rate
        chunkBytes = max(rate / 1000, 1)
        depthNanoseconds = max(Self.depth, Self.nanoseconds(2 &* UInt64(largestDatagram), rate: rate, roundingUp: true))
    }

    /// Takes up to `wanted` bytes at `now`: the bytes granted (0 when the bucket is empty) and
    /// how much of the burst is in use after the take, in nanoseconds of the rate.
    func take(_ wanted: UInt64, now: UInt64) -> (bytes: UInt64, inUse: UInt64) {
        let wantedNanoseconds = Self.nanoseconds(wanted, rate: rate, roundingUp: true)
        var current = fullAt.load(ordering: .relaxed)
        while true {
            let base = max(current, now)
            let inUse = base &- now
            guard inUse < depthNanoseconds else { return (0, depthNanoseconds) }
            let granted = min(wantedNanoseconds, depthNanoseconds &- inUse)
            let next = base &+ granted
            let (exchanged, found) = fullAt.compareExchange(expected: current, desired: next, ordering: .relaxed)
            if exchanged { return (Self.bytes(granted, rate: rate), next &- now) }
            current = found
        }
    }

    /// Returns credit a worker took and did not spend (rounded down: never more than it took).
    func giveBack(_ bytes: UInt64) {
        fullAt.subtract(Self.nanoseconds(bytes, rate: rate, roundingUp: false), ordering: .relaxed)
    }

    /// The burst in use at `now`, in nanoseconds of the rate (for tests and stats).
    func inUse(now: UInt64) -> UInt64 {
        let current = fullAt.load(ordering: .relaxed)
        return current > now ? current - now : 0
    }

    static func nanoseconds(_ bytes: UInt64, rate: UInt64, roundingUp: Bool) -> UInt64 {
        let (high, low) = bytes.multipliedFullWidth(by: 1_000_000_000)
        let (quotient, remainder) = rate.dividingFullWidth((high, low))
        return roundingUp && remainder > 0 ? quotient &+ 1 : quotient
    }

    static func bytes(_ nanoseconds: UInt64, rate: UInt64) -> UInt64 {
        let (high, low) = nanoseconds.multipliedFullWidth(by: rate)
        return (1_000_000_000 as UInt64).dividingFullWidth((high, low)).quotient
    }
}
