import NetAddress
import STUN

/// The Allocate requests a relay has authenticated, each with the client 5-tuple it came from,
/// kept while their nonces are valid: the same signed request (transaction ID and MAC) from any
/// other 5-tuple is a replay. A nonce is bound to the client's IP address, not its port, so
/// that a client a sibling sent on over a new connection or through a NAT that gives it a new
/// port can use it (NonceIssuer); without this record, whoever shares that address (a host, a
/// NAT) could replay a captured Allocate from another port and get an allocation charged to the
/// victim's user. Only Allocates are kept: every other request acts on the allocation of its
/// own 5-tuple and its own user, which a replay from elsewhere does not have.
///
/// Bounded: a ring of `capacity` requests, the oldest forgotten first. Forgetting a request
/// whose nonce is still valid would let its replay in, so the horizon moves up to that nonce's
/// issue second instead, and every Allocate signed with a nonce issued at or before the horizon
/// is refused as stale (the client gets a fresh nonce with the 438). Under a flood of
/// authenticated Allocates nonces thus age faster for Allocate; they are never replayable.
///
/// Contract: one per relay (`TurnSharedState`, behind its lock), since a replay from another
/// port usually reaches another worker; consulted once per authenticated Allocate, never on
/// the packet path. Seconds are the wall clock's that nonces carry, truncated to 32 bits.
struct AcceptedAllocates {
    /// A signed request: its transaction and the first 64 bits of its MAC, which covers the
    /// whole message (nonce included). The MAC keeps a user who guessed another client's
    /// transaction ID from having that client's Allocate refused.
    struct Request: Hashable {
        var transaction: TransactionID
        var mac: UInt64

        /// The request's key, or nil for a message without an integrity attribute.
        init?(_ message: StunMessage) {
            guard let position = message.index.integritySHA256 ?? message.index.integrity else { return nil }
            let offset = message.index[position].offset
            transaction = message.transactionID
            mac = message.bytes[offset..<(offset + 8)].reduce(0) { $0 << 8 | UInt64($1) }
        }
    }

    /// Where a request came from: the client's address and port, and whether over a stream
    /// (the relay's side of the 5-tuple follows from these, for a replay's purposes).
    struct Sender: Equatable {
        var address: Endpoint
        var overStream: Bool
    }

    enum Verdict: Equatable {
        /// Seen first now, or again from its own 5-tuple (a late retransmission).
        case accepted
        /// Already accepted from another 5-tuple.
        case replayed
        /// Its nonce was issued at or before the horizon.
        case pastHorizon
    }

    private var senders: [Request: (sender: Sender, nonceIssued: UInt32)] = [:]
    /// The requests in the order they were accepted; filled up to `capacity`, then overwritten
    /// from the oldest.
    private var order: [Request] = []
    private var oldest = 0
    private var horizon: UInt32?
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity > 0, "a record of accepted Allocates needs room for one")
        self.capacity = capacity
    }

    /// Judges `request` from `sender`, signed with a nonce issued at `nonceIssued` that `nonces`
    /// found valid at `second`, and remembers it when it is accepted for the first time.
    mutating func admit(_ request: Request, from sender: Sender, nonceIssued: UInt32, second: UInt64, nonces: NonceIssuer) -> Verdict {
        if let first = senders[request] { return first.sender == sender ? .accepted : .replayed }
        if let horizon {
            if !nonces.isFresh(issued: horizon, at: second) {
                self.horizon = nil
            } else if Int32(bitPattern: nonceIssued &- horizon) <= 0 {
                return .pastHorizon
            }
        }
        if order.count < capacity {
            order.append(request)
        } else {
            let forgotten = order[oldest]
            if let entry = senders.removeValue(forKey: forgotten),
               nonces.isFresh(issued: entry.nonceIssued, at: second) {
                horizon = horizon.map { Int32(bitPattern: entry.nonceIssued &- $0) > 0 ? entry.nonceIssued : $0 } ?? entry.nonceIssued
            }
            order[oldest] = request
            oldest = (oldest + 1) % capacity
        }
        senders[request] = (sender, nonceIssued)
        return .accepted
    }

    var count: Int { senders.count }
}
