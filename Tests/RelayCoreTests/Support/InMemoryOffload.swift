import FastPath
@testable import RelayCore
import NetAddress

/// An in-memory stand-in for the kernel fast path, for table logic only: it keeps what the
/// tables install and remove, in order, and answers counters, last-forwarded times and credits
/// as the test sets them. The kernel's own behaviour is FastPathTests' and the namespace
/// tests' to check. Driven on the test's thread only.
final class InMemoryOffload: FlowOffload, @unchecked Sendable {
    enum Event: Equatable {
        case install(FlowKey, FlowEntry)
        case remove(FlowKey)
    }

    private(set) var entries: [FlowKey: FlowEntry] = [:]
    private(set) var events: [Event] = []
    /// What `counters` answers for a key while it has an entry.
    var counts: [FlowKey: FlowCounters] = [:]
    /// What `lastForwarded` answers for a key while it has an entry (else the install time).
    var forwardedAt: [FlowKey: UInt64] = [:]
    /// Refuse every install, as a full kernel table does.
    var refusing = false
    /// Called at every install, before it is recorded (to see what the engine had sent then).
    var onInstall: (FlowKey) -> Void = { _ in }
    /// Each entry's credit as the table last set it, less what `spend` took.
    private(set) var credit: [FlowKey: Int64] = [:]
    /// Each entry's packet credit as the table last set it, less what `spend` took.
    private(set) var packetCredit: [FlowKey: Int64] = [:]
    /// How many times a table moved an installed entry's end (or a shared one) through its slot.
    private(set) var expiryMoves = 0
    /// The shared ends reserved and not released, with their time (0: none).
    private(set) var sharedEnds: [FlowSlot: UInt64] = [:]
    private var slotKeys: [FlowSlot: FlowKey] = [:]
    private var nextSlot: UInt32 = 0

    func install(_ key: FlowKey, _ entry: FlowEntry) -> Bool {
        onInstall(key)
        guard !refusing else { return false }
        entries[key] = entry
        events.append(.install(key, entry))
        return true
    }

    func remove(_ key: FlowKey) {
        guard entries.removeValue(forKey: key) != nil else { return }
        slotKeys = slotKeys.filter { $0.value != key }
        counts[key] = nil
        credit[key] = nil
        packetCredit[key] = nil
        forwardedAt[key] = nil
        events.append(.remove(key))
    }

    func slot(_ key: FlowKey) -> FlowSlot? {
        guard entries[key] != nil else { return nil }
        if let known = slotKeys.first(where: { $0.value == key })?.key { return known }
        nextSlot += 1
        slotKeys[FlowSlot(nextSlot)] = key
        return FlowSlot(nextSlot)
    }

    /// Moves the entry's `expiresAt` (or a shared end), as the kernel's slot would.
    func setExpiry(_ slot: FlowSlot, _ time: UInt64?) {
        expiryMoves += 1
        if sharedEnds[slot] != nil {
            sharedEnds[slot] = time ?? 0
            return
        }
        guard let key = slotKeys[slot], entries[key] != nil else { return }
        entries[key]?.expiresAt = time
    }

    func reserveEnd(_ time: UInt64?) -> FlowSlot? {
        guard !refusing else { return nil }
        nextSlot += 1
        sharedEnds[FlowSlot(nextSlot)] = time ?? 0
        return FlowSlot(nextSlot)
    }

    func releaseEnd(_ slot: FlowSlot) { sharedEnds[slot] = nil }

    /// When `key`'s entry stops forwarding: the earliest of its own end and the ends it shares
    /// (nil without an entry, or with no end at all).
    func end(of key: FlowKey) -> UInt64? {
        guard let entry = entries[key] else { return nil }
        let ends = [entry.expiresAt].compactMap { $0 } + entry.sharedEnds.compactMap { sharedEnds[$0] }.filter { $0 != 0 }
        return ends.min()
    }

    func counters(_ key: FlowKey) -> FlowCounters? { entries[key] == nil ? nil : counts[key] ?? FlowCounters() }

    func lastForwarded(_ key: FlowKey) -> UInt64? { entries[key] == nil ? nil : forwardedAt[key] ?? 0 }

    func exchangeCredit(_ key: FlowKey, _ bytes: Int64) -> Int64? {
        guard entries[key] != nil else { return nil }
        defer { credit[key] = bytes }
        return credit[key] ?? 0
    }

    func exchangePacketCredit(_ key: FlowKey, _ packets: Int64) -> Int64? {
        guard entries[key] != nil else { return nil }
        defer { packetCredit[key] = packets }
        return packetCredit[key] ?? 0
    }

    /// Takes `bytes` (and `packets`) off `key`'s credits, as the kernel does for what it
    /// forwards on credit.
    func spend(_ key: FlowKey, _ bytes: Int64, packets: Int64 = 0) {
        credit[key, default: 0] -= bytes
        if packets != 0 { packetCredit[key, default: 0] -= packets }
    }

    /// Counters of `packets` datagrams of `bytes` bytes each that arrived and left with `ecn`.
    static func carried(_ packets: UInt64, bytes: UInt64, ecn: Int) -> FlowCounters {
        var counters = FlowCounters()
        counters.packets = packets
        counters.bytes = packets * bytes
        counters.ecnIn[ecn] = packets
        counters.ecnOut[ecn] = packets
        return counters
    }
}
