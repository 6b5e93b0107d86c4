import Glibc

/// The sockets one engine drives, by slot, of three kinds: datagram (UDP), listener (a TCP
/// socket that accepts) and stream (an accepted TCP connection). A slot is reused only after
/// its socket is fully released (for io_uring: after the last completion of its operations),
/// and every reuse bumps the generation so stale identifiers and completions miss.
final class SocketTable {
    enum Kind: UInt8 {
        case datagram, listener, stream
    }

    /// What keeps a slot's descriptor open: the one object that owns it, by kind. Dropping it
    /// (`release`) closes the descriptor.
    enum DescriptorOwner {
        case datagram(UDPSocket)
        case listener(TCPListener)
        case stream(TCPConnection)
    }

    /// Plain values only, so that reading an entry on the packet path costs no reference
    /// counting; the objects that own the descriptors live in `descriptorOwners`.
    struct Entry {
        var generation: UInt32 = 0
        /// Registered and receiving; false while an io_uring receive is being cancelled.
        var active = false
        var kind = Kind.datagram
        var gsoEnabled = false
        /// The kernel took UDP_GRO: receives may hold several datagrams.
        var groEnabled = false
        var ipv4 = false
        var descriptor: Int32 = -1
        var lastOverflow: UInt32 = 0
        /// A stream's index in the engine's `StreamTable`; -1 for the other kinds.
        var stream: Int32 = -1
        var owner = OwnerTag.unowned
    }

    @exclusivity(unchecked) private(set) var entries: [Entry] = []
    private var descriptorOwners: [DescriptorOwner?] = []
    private var free: [Int32] = []
    private(set) var activeCount = 0

    func add(_ socket: UDPSocket, owner: OwnerTag = .unowned, gso: Bool, gro: Bool = false, timestamps: Bool = false) -> SocketID {
        let slot = take(.datagram(socket), descriptor: socket.descriptor, owner: owner)
        entries[slot].gsoEnabled = gso && socket.supportsGSO
        entries[slot].groEnabled = gro && UDPSocket.enableGRO(socket.descriptor)
        if timestamps { UDPSocket.enableTimestamps(socket.descriptor) }
        entries[slot].ipv4 = socket.family == Int32(AF_INET)
        return SocketID(slot: Int32(slot), generation: entries[slot].generation)
    }

    func add(_ listener: TCPListener, owner: OwnerTag) -> SocketID {
        let slot = take(.listener(listener), descriptor: listener.descriptor, owner: owner)
        entries[slot].kind = .listener
        return SocketID(slot: Int32(slot), generation: entries[slot].generation)
    }

    /// An accepted connection, as stream `stream` of the engine's `StreamTable`; unowned until
    /// its owner takes the `accepted` event and calls `setOwner`.
    func add(_ connection: TCPConnection, stream: Int32) -> SocketID {
        let slot = take(.stream(connection), descriptor: connection.owned.rawValue, owner: .unowned)
        entries[slot].kind = .stream
        entries[slot].stream = stream
        return SocketID(slot: Int32(slot), generation: entries[slot].generation)
    }

    private func take(_ socket: DescriptorOwner, descriptor: Int32, owner: OwnerTag) -> Int {
        let slot: Int
        if let reused = free.popLast() {
            slot = Int(reused)
        } else {
            slot = entries.count
            entries.append(Entry())
            descriptorOwners.append(nil)
        }
        descriptorOwners[slot] = socket
        var entry = Entry()
        entry.generation = entries[slot].generation &+ 1
        entry.active = true
        entry.descriptor = descriptor
        entry.owner = owner
        entries[slot] = entry
        activeCount += 1
        return slot
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

    /// The connection of stream slot `slot`, for its addresses and a reset on close.
    func connection(_ slot: Int) -> TCPConnection? {
        if case .stream(let connection)? = descriptorOwners[slot] { return connection }
        return nil
    }

    /// Stops using the socket; the slot stays reserved until `release`.
    func deactivate(_ slot: Int) {
        if entries[slot].active { activeCount -= 1 }
        entries[slot].active = false
        entries[slot].owner = .unowned
    }

    func isReleased(_ slot: Int) -> Bool { descriptorOwners[slot] == nil }

    /// Closes the socket (by dropping its descriptor owner) and frees the slot for reuse.
    func release(_ slot: Int) {
        deactivate(slot)
        guard descriptorOwners[slot] != nil else { return }
        descriptorOwners[slot] = nil
        entries[slot].descriptor = -1
        entries[slot].stream = -1
        free.append(Int32(slot))
    }

    @inline(__always)
    subscript(slot: Int) -> Entry {
        get { entries[slot] }
        set { entries[slot] = newValue }
    }
}
