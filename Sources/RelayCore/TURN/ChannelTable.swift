import DatagramEngine
import NetAddress

/// A channel (RFC 8656 section 12) as the packet path reads it: its number, its peer, when it
/// ends, and when the permission for its peer's address ends. The permission's expiry is a
/// copy that `ChannelTable.renewPermission` keeps in step with the allocation's permissions,
/// so a ChannelData message or a peer's datagram on a channel needs one lookup, not two.
struct ChannelBinding {
    var number: UInt16
    var peer: Endpoint
    var expires: UInt64
    var permissionExpires: UInt64
}

/// An allocation's channels, found by number (ChannelData from the client) and by peer
/// (datagrams from peers). Almost every allocation has a few channels (a WebRTC client binds
/// one per remote candidate it talks to through the relay), so up to `scanLimit` of them the
/// packet path compares entries in place; past that it asks the two indexes, which are kept
/// for every size so the switch costs nothing. Changed on the control path only.
struct ChannelTable {
    static let scanLimit = 8

    private(set) var entries: [ChannelBinding] = []
    private var byNumber: [UInt16: Int] = [:]
    private var byPeer: [Endpoint: Int] = [:]

    var count: Int { entries.count }

    @inline(__always)
    func binding(number: UInt16) -> ChannelBinding? {
        if entries.count <= ChannelTable.scanLimit { return scan { $0.number == number } }
        return byNumber[number].map { entries[$0] }
    }

    @inline(__always)
    func binding(peer: Endpoint) -> ChannelBinding? {
        if entries.count <= ChannelTable.scanLimit { return scan { $0.peer == peer } }
        return byPeer[peer].map { entries[$0] }
    }

    /// An index loop, not `first(where:)`: the generic Collection path allocates in debug builds.
    @inline(__always)
    private func scan(_ matches: (ChannelBinding) -> Bool) -> ChannelBinding? {
        var index = 0
        while index < entries.count {
            if matches(entries[index]) { return entries[index] }
            index += 1
        }
        return nil
    }

    /// Binds `number` to `peer` until `expires`, or refreshes that binding; true when the
    /// channel is new. The caller has checked that neither is bound to another (RFC 8656
    /// section 12.2).
    @discardableResult
    mutating func bind(_ number: UInt16, peer: Endpoint, expires: UInt64, permissionExpires: UInt64) -> Bool {
        if let index = byNumber[number] {
            entries[index].expires = expires
            entries[index].permissionExpires = permissionExpires
            return false
        }
        byNumber[number] = entries.count
        byPeer[peer] = entries.count
        entries.append(ChannelBinding(number: number, peer: peer, expires: expires, permissionExpires: permissionExpires))
        return true
    }

    /// When the first channel ends (`UInt64.max` without channels).
    var earliestExpiry: UInt64 {
        var earliest = UInt64.max
        for entry in entries where entry.expires < earliest { earliest = entry.expires }
        return earliest
    }

    /// The permission for `address` (a permission key: port 0) now ends at `expires`.
    mutating func renewPermission(_ address: Endpoint, until expires: UInt64) {
        for index in entries.indices where Allocation.permissionKey(entries[index].peer) == address {
            entries[index].permissionExpires = expires
        }
    }

    /// Forgets the channels whose time has passed; returns how many.
    @discardableResult
    mutating func removeExpired(now: UInt64) -> Int {
        let before = entries.count
        var index = 0
        while index < entries.count {
            guard entries[index].expires <= now else {
                index += 1
                continue
            }
            let gone = entries[index]
            byNumber[gone.number] = nil
            byPeer[gone.peer] = nil
            let last = entries.removeLast()
            if index < entries.count {
                entries[index] = last
                byNumber[last.number] = index
                byPeer[last.peer] = index
            }
        }
        return before - entries.count
    }
}
