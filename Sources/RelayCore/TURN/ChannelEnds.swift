import FastPath
import NetAddress

/// The ends an allocation's channels in the kernel share: the allocation's own, and each
/// permission's that one of them goes through, each a slot the kernel reads beside the
/// channel's own end. A Refresh or a renewed permission then moves one end, not one per
/// channel. A permission's slot is held while a channel in the kernel uses it.
struct ChannelEnds {
    var allocation: FlowSlot
    var permissions: [Endpoint: (slot: FlowSlot, users: Int)] = [:]

    /// The slot of `permission`'s end, taken (ending at `end`) for its first channel.
    mutating func use(_ permission: Endpoint, ending end: UInt64, _ offload: any FlowOffload) -> FlowSlot? {
        if let held = permissions[permission] {
            permissions[permission]?.users = held.users + 1
            return held.slot
        }
        guard let slot = offload.reserveEnd(end) else { return nil }
        permissions[permission] = (slot, 1)
        return slot
    }

    /// A channel through `permission` left the kernel: its slot goes back with its last one.
    mutating func stopUsing(_ permission: Endpoint, _ offload: any FlowOffload) {
        guard let held = permissions[permission] else { return }
        if held.users > 1 {
            permissions[permission]?.users = held.users - 1
        } else {
            offload.releaseEnd(held.slot)
            permissions[permission] = nil
        }
    }

    /// Gives every slot back (the allocation has no channel in the kernel any more).
    func release(_ offload: any FlowOffload) {
        for held in permissions.values { offload.releaseEnd(held.slot) }
        offload.releaseEnd(allocation)
    }
}
