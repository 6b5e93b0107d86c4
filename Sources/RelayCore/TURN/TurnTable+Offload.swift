import DatagramEngine
import FastPath
import NetAddress
import STUN

/// One channel the kernel carries: its two entries and their own end (the channel's); the
/// ends they share with the allocation's other channels (its permission's, the allocation's)
/// are in `ChannelEnds`.
struct OffloadedChannel: Equatable {
    var pair: OffloadedPair
    var expires: UInt64
    /// The permission key (the peer's address, port 0) the channel goes through.
    var permission: Endpoint
    /// The two entries' slots, through which their own end moves without a map update.
    var slots: (forward: FlowSlot, backward: FlowSlot)?
    /// What each direction spent of its credit in the last round (`TurnTable+Credit` shares an
    /// allocation's credit out by it).
    var forwardSpent: UInt64 = 0
    var backwardSpent: UInt64 = 0

    static func == (left: OffloadedChannel, right: OffloadedChannel) -> Bool {
        left.pair == right.pair && left.expires == right.expires && left.permission == right.permission
            && left.slots?.forward == right.slots?.forward && left.slots?.backward == right.slots?.backward
            && left.forwardSpent == right.forwardSpent && left.backwardSpent == right.backwardSpent
    }
}

/// What a successful Refresh, CreatePermission or ChannelBind changed that the kernel's
/// entries of the allocation carry, so that each request touches only the channels it
/// affects.
enum ChannelChange {
    /// A ChannelBind: its channel, and the permission of its peer's address (renewed with it).
    case bound(UInt16, permission: Endpoint)
    /// A CreatePermission: the permissions of these addresses (permission keys: port 0).
    case permitted([Endpoint])
    /// A Refresh: the allocation's lifetime.
    case refreshed
}

/// TURN channels in the kernel fast path (RFC 8656 section 12 both ways): ChannelData from the
/// client loses its header and goes to the peer from the relayed address; the peer's datagrams
/// gain it and go to the client from the address it reached. Entries are written after a
/// ChannelBind, CreatePermission or Refresh succeeds and before its answer leaves, so the
/// first ChannelData after the success already finds its entry; each carries the channel's
/// end, so the kernel stops forwarding when user space would, even if user space stalls. A
/// request changes only the channels it affects: a new channel is installed (its addresses
/// resolved once), a moved end is a store into the entries' slots, nothing else is touched.
/// What the kernel does not do the same way stays here: clients over TCP or TLS, Send and Data
/// indications, peers of the other family than the client. An allocation with a bandwidth
/// quota, and every allocation under the egress cap, is forwarded on credit
/// (`TurnTable+Credit`): the kernel carries what the buckets would pass unmarked, and hands
/// the rest to the user-space policers.
extension TurnTable {
    /// Brings the kernel in line with what `change` did to `client`'s allocation: a moved
    /// lifetime or permission end is one store into its shared slot; a bound channel is
    /// installed, or its own end moved.
    func offloadChannels(of client: TurnClient, after change: ChannelChange) {
        guard let offload, !client.isStream, let allocation = store.index(of: client) else { return }
        switch change {
        case .refreshed:
            if let ends = channelEnds[allocation] { offload.setExpiry(ends.allocation, store[allocation].expires) }
        case .permitted(let permissions):
            guard let ends = channelEnds[allocation] else { return }
            for permission in permissions {
                if let held = ends.permissions[permission] { offload.setExpiry(held.slot, store[allocation].permissions[permission]) }
            }
        case .bound(let number, let permission):
            if let held = channelEnds[allocation]?.permissions[permission] {
                offload.setExpiry(held.slot, store[allocation].permissions[permission])
            }
            guard let binding = store[allocation].channels.binding(number: number),
                  offloadChannel(binding, of: allocation, client: client, now: clock.now) else { return }
            let credited = store[allocation].bandwidth.isLimited || packets.egress.isOn
            if credited && offloadedChannels[allocation] != nil {
                creditedAllocations.insert(allocation)
                // Under the egress cap the next round grants it (the cap is shared by all).
                if !packets.egress.isOn {
                    settleCredit(allocation)
                    grantCredit(allocation, egressShare: nil)
                }
            } else {
                creditedAllocations.remove(allocation)
            }
        }
    }

    /// Puts a channel the request bound (or bound again) in the kernel as it now stands:
    /// installs it when it is new there, moves its own end when it is not. True when the
    /// allocation's set of channels in the kernel changed (its credit is then shared out again).
    private func offloadChannel(_ binding: ChannelBinding, of allocation: Int, client: TurnClient, now: UInt64) -> Bool {
        guard let offload else { return false }
        let number = binding.number
        let old = offloadedChannels[allocation]?[number]
        if var channel = old, channel.pair.backward.source == binding.peer, let slots = channel.slots {
            guard channel.expires != binding.expires else { return false }
            offload.setExpiry(slots.forward, binding.expires)
            offload.setExpiry(slots.backward, binding.expires)
            channel.expires = binding.expires
            offloadedChannels[allocation]?[number] = channel
            return false
        }
        if let old { takeOffloaded(allocation, number, old) }
        let permission = Allocation.permissionKey(binding.peer)
        guard let local = listenerAddress(client), let relayed = relayedAddress(allocation, toward: binding.peer),
              var ends = channelEnds[allocation] ?? offload.reserveEnd(store[allocation].expires).map({ ChannelEnds(allocation: $0) }) else {
            return old != nil
        }
        defer { channelEnds[allocation] = ends.permissions.isEmpty ? nil : ends }
        guard let permissionEnd = ends.use(permission, ending: binding.permissionExpires, offload) else {
            if ends.permissions.isEmpty { ends.release(offload) }
            return old != nil
        }
        let credited = store[allocation].bandwidth.isLimited || packets.egress.isOn
        let pair = OffloadedPair(forward: FlowKey(source: client.address, destination: local, channel: number),
                                 backward: FlowKey(source: binding.peer, destination: relayed), written: now,
                                 forwardCredit: credited ? 0 : nil, backwardCredit: credited ? 0 : nil)
        var channel = OffloadedChannel(pair: pair, expires: binding.expires, permission: permission)
        let policy = settings.marking
        let shared = [permissionEnd, ends.allocation]
        // Towards the peer from the relayed socket (DF as the Allocate asked), towards the
        // client from the listener (the kernel's default, DF set).
        guard offload.install(pair.forward, .relay(from: relayed, to: binding.peer, kind: .stripChannel(number), policy: policy,
                                                   expiresAt: binding.expires, credited: credited,
                                                   dontFragment: store[allocation].dontFragment, sharedEnds: shared)),
              offload.install(pair.backward, .relay(from: local, to: client.address, kind: .addChannel(number), policy: policy,
                                                    expiresAt: binding.expires, credited: credited, sharedEnds: shared)),
              let forward = offload.slot(pair.forward), let backward = offload.slot(pair.backward) else {
            remove(channel, of: allocation)
            ends.stopUsing(permission, offload)
            if ends.permissions.isEmpty { ends.release(offload) }
            return old != nil
        }
        channel.slots = (forward, backward)
        offloadedChannels[allocation, default: [:]][number] = channel
        return true
    }

    /// Takes every entry of `allocation` out of the kernel, its counts added to the allocation's.
    func takeOffloaded(_ allocation: Int) {
        guard let channels = offloadedChannels[allocation] else { return }
        for (number, channel) in channels { takeOffloaded(allocation, number, channel) }
    }

    /// Takes out the entries whose time has passed (the kernel stopped forwarding them then):
    /// the channel's own end, its permission's or its allocation's.
    func takeExpiredOffloads(now: UInt64) {
        for (allocation, channels) in offloadedChannels {
            let lifetime = store[allocation].expires
            for (number, channel) in channels
            where min(channel.expires, lifetime, store[allocation].permissions[channel.permission] ?? 0) <= now {
                takeOffloaded(allocation, number, channel)
            }
        }
    }

    /// `allocation`'s counters with what the kernel carried for it so far (the entries stay).
    func countersWithKernel(_ allocation: Int) -> AllocationCounters {
        var counters = store[allocation].counters
        guard let offload, let channels = offloadedChannels[allocation] else { return counters }
        for channel in channels.values {
            if let toPeer = offload.counters(channel.pair.forward) { counters.addToPeers(toPeer) }
            if let toClient = offload.counters(channel.pair.backward) { counters.addToClient(toClient) }
        }
        return counters
    }

    /// Takes one channel's entries out (their counts added to the allocation's), and the slots
    /// of the ends it shared once no other channel shares them.
    private func takeOffloaded(_ allocation: Int, _ number: UInt16, _ channel: OffloadedChannel) {
        guard let offload else { return }
        remove(channel, of: allocation)
        offloadedChannels[allocation]?[number] = nil
        channelEnds[allocation]?.stopUsing(channel.permission, offload)
        guard offloadedChannels[allocation]?.isEmpty ?? true else { return }
        offloadedChannels[allocation] = nil
        creditedAllocations.remove(allocation)
        channelEnds.removeValue(forKey: allocation)?.release(offload)
    }

    /// Takes a channel's two entries out of the kernel, their counts added to the allocation's.
    private func remove(_ channel: OffloadedChannel, of allocation: Int) {
        guard let offload else { return }
        var pair = channel.pair
        if pair.isCredited { packets.egress.giveBack(settle(&pair, allocation)) }
        let counts = pair.remove(from: offload)
        if let toPeer = counts.forward { store[allocation].counters.addToPeers(toPeer) }
        if let toClient = counts.backward { store[allocation].counters.addToClient(toClient) }
    }

    /// The relay's address `client` sends to: the one it reached on a wildcard listener, else
    /// the listener's own.
    private func listenerAddress(_ client: TurnClient) -> Endpoint? {
        guard let bound = listenerAddresses[client.socket.slot] else { return nil }
        return OffloadAddress.local(bound: bound, reached: client.localAddress, port: bound.port)
    }

    /// The address and port `allocation`'s relayed socket for `peer`'s family sends from.
    private func relayedAddress(_ allocation: Int, toward peer: Endpoint) -> Endpoint? {
        guard let relay = store[allocation].relay(for: peer) else { return nil }
        let family: AddressFamily = relay.ipv6 ? .ipv6 : .ipv4
        guard let bound = relayedSockets.bindAddress(family) else { return nil }
        guard var address = bound.isWildcard ? OffloadAddress.routeSource(toward: peer) : bound else { return nil }
        address.port = relay.port
        return address
    }
}

extension AllocationCounters {
    /// Adds what the kernel carried from the client to a peer (ChannelData in).
    mutating func addToPeers(_ kernel: FlowCounters) {
        channelDataIn &+= kernel.packets
        bytesToPeers &+= kernel.bytes
        for codepoint in 0..<4 {
            ecnFromClient[codepoint] &+= kernel.ecnIn[codepoint]
            ecnToPeers[codepoint] &+= kernel.ecnOut[codepoint]
        }
    }

    /// Adds what the kernel carried from a peer to the client (ChannelData out).
    mutating func addToClient(_ kernel: FlowCounters) {
        channelDataOut &+= kernel.packets
        bytesToClient &+= kernel.bytes
        for codepoint in 0..<4 {
            ecnFromPeers[codepoint] &+= kernel.ecnIn[codepoint]
            ecnToClient[codepoint] &+= kernel.ecnOut[codepoint]
        }
    }
}
