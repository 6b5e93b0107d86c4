import FastPath
import NetAddress

/// What a table may ask of the kernel fast path, and nothing more: put an entry in for a flow
/// it has decided (or replace it), take it out, read its counters, see when the kernel last
/// carried one of its datagrams, and hand it credit (bytes, packets) for its rate limits. Never called per
/// datagram: only when a flow is established, refreshed, relatched or ends, and at
/// housekeeping.
///
/// Contract: `KernelFastPath` is the production type, one per process and shared by every
/// worker (its methods are safe from any thread; `lastForwarded` and the credit exchanges are
/// plain memory reads and writes, no system call). `install` answering false means the flow
/// stays on the user-space path, which is always correct: the kernel hands every datagram it
/// has no entry for to the relay's sockets unmodified. A table removes every entry it
/// installed before it forgets the flow, so an entry never outlives the user-space state
/// that decided it.
public protocol FlowOffload: AnyObject, Sendable {
    /// Puts `entry` in for `key` or replaces the one there (its counters kept); false when
    /// the kernel refused it (table full, a family it cannot rewrite), counted by the offload.
    func install(_ key: FlowKey, _ entry: FlowEntry) -> Bool
    /// Takes the entry for `key` out; its datagrams reach user space from now on.
    func remove(_ key: FlowKey)
    /// The slot of `key`'s entry (nil without one), for `setExpiry` while the entry stays in.
    func slot(_ key: FlowKey) -> FlowSlot?
    /// Moves the end in `slot` (an entry's own, or one entries share) to `time` (nil: none): a
    /// store, no system call, so that a request renewing what many entries end with costs
    /// what renewing it costs.
    func setExpiry(_ slot: FlowSlot, _ time: UInt64?)
    /// A slot for an end entries share (`FlowEntry.sharedEnds`), ending at `time`; nil when
    /// there is no room. Released by `releaseEnd` once no entry names it.
    func reserveEnd(_ time: UInt64?) -> FlowSlot?
    func releaseEnd(_ slot: FlowSlot)
    /// The entry's counters summed over every CPU since it was installed; nil without one.
    func counters(_ key: FlowKey) -> FlowCounters?
    /// When (MonotonicClock nanoseconds) the kernel last forwarded a datagram of `key`, or
    /// when the entry was installed if it has forwarded none; nil without an entry.
    func lastForwarded(_ key: FlowKey) -> UInt64?
    /// Sets the entry's credit (bytes it may still forward before handing its datagrams back)
    /// to `bytes` and returns what was left of the previous credit; nil without an entry.
    func exchangeCredit(_ key: FlowKey, _ bytes: Int64) -> Int64?
    /// Sets the entry's packet credit (datagrams it may still forward before handing them
    /// back) to `packets` and returns what was left of the previous one; nil without an entry.
    func exchangePacketCredit(_ key: FlowKey, _ packets: Int64) -> Int64?
}
