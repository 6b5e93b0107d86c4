import DatagramEngine
import STUN

/// The answers to recent authenticated requests, by client and transaction, so a
/// retransmitted request gets the same answer (RFC 8489 section 6.3.1: a Refresh that deleted
/// an allocation must not get 437 when retransmitted). Bounded: a ring of `capacity` entries,
/// each kept `holdNanoseconds` (40 s covers the client's retransmissions, RFC 8489 6.2.1).
struct TransactionCache {
    struct Key: Hashable {
        var client: TurnClient
        var transaction: TransactionID
    }

    private var answers: [Key: (bytes: [UInt8], stored: UInt64)] = [:]
    private var order: [Key?]
    private var next = 0
    let holdNanoseconds: UInt64

    init(capacity: Int = 4096, holdNanoseconds: UInt64 = 40_000_000_000) {
        order = Array(repeating: nil, count: capacity)
        self.holdNanoseconds = holdNanoseconds
    }

    func answer(_ key: Key, now: UInt64) -> [UInt8]? {
        guard let entry = answers[key], now &- entry.stored < holdNanoseconds else { return nil }
        return entry.bytes
    }

    mutating func store(_ bytes: [UInt8], for key: Key, now: UInt64) {
        if let oldest = order[next] { answers[oldest] = nil }
        order[next] = key
        next = (next + 1) % order.count
        answers[key] = (bytes, now)
    }

    var count: Int { answers.count }
}
