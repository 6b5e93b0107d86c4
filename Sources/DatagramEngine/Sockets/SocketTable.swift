import Glibc

/// The sockets one engine drives, by slot. A slot is reused only after its socket is fully
/// released (for io_uring: after the last completion of its receive), and every reuse bumps
/// the generation so stale identifiers and completions miss.
final class SocketTable {
    /// Plain values only, so that reading an entry on the packet path costs no reference
    /// counting; the socket objects that own the descriptors live in `owners`.
    struct Entry {
        var generation: UInt32 = 0
        /// Registered and receiving; false while an io_uring receive is being cancelled.
        var active = false
        var gsoEnabled = false
        /// The kernel took UDP_GRO: receives may hold several datagrams.
        var groEnabled = false
        var ipv4 = false
        var descriptor: Int32 = -1
        var lastOverflow: UInt32 = 0
        var owner = OwnerTag.unowned
    }

    // Touched per datagram by this engine's thread only, never while another access to it is
    // open: the dynamic exclusivity check (swift_beginAccess, about 80 instructions) buys nothing.
    @exclusivity(unchecked) private(set) var entries: [Entry] = []
    private var owners: [UDPSocket?] = []
    private var free: [Int32] = []
    private(set) var activeCount = 0

    func add(_ socket: UDPSocket, owner: OwnerTag = .unowned, gso: Bool, gro: Bool = false) -> SocketID {
        let slot: Int32
        if let reused = free.popLast() {
            slot = reused
        } else {
            slot = Int32(entries.count)
            entries.append(Entry())
            owners.append(nil)
        }
        owners[Int(slot)] = socket
        entries[Int(slot)].generation &+= 1
        entries[Int(slot)].active = true
        entries[Int(slot)].gsoEnabled = gso && socket.supportsGSO
        entries[Int(slot)].groEnabled = gro && UDPSocket.enableGRO(socket.descriptor)
        entries[Int(slot)].ipv4 = socket.family == Int32(AF_INET)
        entries[Int(slot)].descriptor = socket.descriptor
        entries[Int(slot)].lastOverflow = 0
        entries[Int(slot)].owner = owner
        activeCount += 1
        return SocketID(slot: slot, generation: entries[Int(slot)].generation)
    }

    /// The slot of `id` when it still names an active socket.
    @inline(__always)
    func lookup(_ id: SocketID) -> Int? { entry(id) == nil ? nil : Int(id.slot) }

    /// The entry of `id` when it still names an active socket: the lookup and the read in one.
    @inline(__always)
    func entry(_ id: SocketID) -> Entry? {
        let slot = Int(id.slot)
        guard slot >= 0, slot < entries.count else { return nil }
        let entry = entries[slot]
        return entry.active && entry.generation == id.generation ? entry : nil
    }

    /// Whether `slot` exists and is at `generation` (active or being released).
    @inline(__always)
    func holds(slot: Int, generation: UInt32) -> Bool {
        slot < entries.count && entries[slot].generation == generation
    }

    /// Stops using the socket; the slot stays reserved until `release`.
    func deactivate(_ slot: Int) {
        if entries[slot].active { activeCount -= 1 }
        entries[slot].active = false
        entries[slot].owner = .unowned
    }

    func isReleased(_ slot: Int) -> Bool { owners[slot] == nil }

    /// Closes the socket (by dropping it) and frees the slot for reuse.
    func release(_ slot: Int) {
        deactivate(slot)
        guard owners[slot] != nil else { return }
        owners[slot] = nil
        entries[slot].descriptor = -1
        free.append(Int32(slot))
    }

    @inline(__always)
    subscript(slot: Int) -> Entry {
        get { entries[slot] }
        set { entries[slot] = newValue }
    }
}
