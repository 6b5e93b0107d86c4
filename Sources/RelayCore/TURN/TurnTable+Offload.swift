import DatagramEngine
import FastPath
import NetAddress
import STUN

/// One channel the kernel carries: its two entries, and when they stop forwarding (the
/// earliest of the channel's, its permission's and its allocation's end), with the first two
/// kept apart so that a request renewing one moves the end without asking the channel table.
struct OffloadedChannel: Equatable {
    var pair: OffloadedPair
    var expires: UInt64
    var channelExpires: UInt64
    var permissionExpires: UInt64
    /// The permission key (the peer's address, port 0) the channel's permission is kept under.
    var permission: Endpoint
    /// The two entries' slots, through which their end moves without a map update.
    var slots: (forward: FlowSlot, backward: FlowSlot)?
    /// What each direction spent of its credit in the last round (`TurnTable+Credit` shares an
    /// allocation's credit out by it).
    var forwardSpent: UInt64 = 0
    var backwardSpent: UInt64 = 0

    static func == (left: OffloadedChannel, right: OffloadedChannel) -> Bool {
        left.pair == right.pair && left.expires == right.expires && left.channelExpires == right.channelExpires
            && left.permissionExpires == right.permissionExpires && left.permission == right.permission
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
    /// Brings the entries of the channels `change` affects in line with `client`'s allocation.
    func offloadChannels(of client: TurnClient, after change: ChannelChange) {
        guard offload != nil, !client.isStream, let allocation = store.index(of: client) else { return }
        let now = clock.now
        var reshaped = false
        switch change {
        case .refreshed:
            reshaped = moveEnds(of: allocation, now: now) { _ in true }
        case .permitted(let permissions):
            // Few addresses a request: their ends looked up once, not once a channel.
            let ends = permissions.map { store[allocation].permissions[$0] ?? 0 }
            reshaped = moveEnds(of: allocation, now: now) { channel in
                guard let found = permissions.firstIndex(of: channel.permission) else { return false }
                channel.permissionExpires = ends[found]
                return true
            }
        case .bound(let number, let permission):
            let end = store[allocation].permissions[permission] ?? 0
            reshaped = moveEnds(of: allocation, now: now) { channel in
                guard channel.permission == permission else { return false }
                channel.permissionExpires = end
                return true
            }
            if let binding = store[allocation].channels.binding(number: number) {
                reshaped = offloadChannel(binding, of: allocation, client: client, now: now) || reshaped
            }
        }
        guard reshaped else { return }
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

    /// Moves the end of the allocation's channels in the kernel that `renew` picks (and
    /// updates: a renewed permission's end), to the earliest of the channel's, its
    /// permission's and the allocation's: a store into each entry's slot. A channel whose end
    /// has come is taken out. True when any was. The channels are taken out of the table's
    /// dictionary while they change, so that nothing is copied.
    private func moveEnds(of allocation: Int, now: UInt64, renew: (inout OffloadedChannel) -> Bool) -> Bool {
        guard let offload, var channels = offloadedChannels.removeValue(forKey: allocation) else { return false }
        let lifetime = store[allocation].expires
        var ended: [UInt16] = []
        for index in channels.indices where renew(&channels.values[index]) {
            let channel = channels.values[index]
            let expires = min(channel.channelExpires, channel.permissionExpires, lifetime)
            guard expires != channel.expires else { continue }
            guard expires > now, let slots = channel.slots else {
                ended.append(channels.keys[index])
                continue
            }
            offload.setExpiry(slots.forward, expires)
            offload.setExpiry(slots.backward, expires)
            channels.values[index].expires = expires
        }
        for number in ended {
            if let channel = channels.removeValue(forKey: number) { takeOffloaded(allocation, number, channel) }
        }
        offloadedChannels[allocation] = channels.isEmpty ? nil : channels
        return !ended.isEmpty
    }

    /// Puts a channel the request bound (or bound again) in the kernel as it now stands:
    /// installs it when it is new there, moves its end when it is not. True when the
    /// allocation's set of channels in the kernel changed (its credit is then shared out again).
    private func offloadChannel(_ binding: ChannelBinding, of allocation: Int, client: TurnClient, now: UInt64) -> Bool {
        guard let offload else { return false }
        let number = binding.number
        let expires = min(binding.expires, binding.permissionExpires, store[allocation].expires)
        let old = offloadedChannels[allocation]?[number]
        if var channel = old, channel.pair.backward.source == binding.peer, let slots = channel.slots, expires > now {
            channel.channelExpires = binding.expires
            channel.permissionExpires = binding.permissionExpires
            if channel.expires != expires {
                offload.setExpiry(slots.forward, expires)
                offload.setExpiry(slots.backward, expires)
                channel.expires = expires
            }
            offloadedChannels[allocation]?[number] = channel
            return false
        }
        if let old {
            takeOffloaded(allocation, number, old)
            offloadedChannels[allocation]?[number] = nil
            if offloadedChannels[allocation]?.isEmpty == true { offloadedChannels[allocation] = nil }
        }
        guard expires > now, let local = listenerAddress(client), let relayed = relayedAddress(allocation, toward: binding.peer) else {
            return old != nil
        }
        let credited = store[allocation].bandwidth.isLimited || packets.egress.isOn
        let pair = OffloadedPair(forward: FlowKey(source: client.address, destination: local, channel: number),
                                 backward: FlowKey(source: binding.peer, destination: relayed), written: now,
                                 forwardCredit: credited ? 0 : nil, backwardCredit: credited ? 0 : nil)
        var channel = OffloadedChannel(pair: pair, expires: expires, channelExpires: binding.expires,
                                       permissionExpires: binding.permissionExpires, permission: Allocation.permissionKey(binding.peer))
        let policy = settings.marking
        // Towards the peer from the relayed socket (DF as the Allocate asked), towards the
        // client from the listener (the kernel's default, DF set).
        guard offload.install(pair.forward, .relay(from: relayed, to: binding.peer, kind: .stripChannel(number), policy: policy,
                                                   expiresAt: expires, credited: credited, dontFragment: store[allocation].dontFragment)),
              offload.install(pair.backward, .relay(from: local, to: client.address, kind: .addChannel(number), policy: policy,
                                                    expiresAt: expires, credited: credited)),
              let forward = offload.slot(pair.forward), let backward = offload.slot(pair.backward) else {
            takeOffloaded(allocation, number, channel)
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
        offloadedChannels[allocation] = nil
        creditedAllocations.remove(allocation)
    }

    /// Takes out the entries whose time has passed (the kernel stopped forwarding them then).
    func takeExpiredOffloads(now: UInt64) {
        for (allocation, channels) in offloadedChannels {
            for (number, channel) in channels where channel.expires <= now {
                takeOffloaded(allocation, number, channel)
                offloadedChannels[allocation]?[number] = nil
            }
            if offloadedChannels[allocation]?.isEmpty == true {
                offloadedChannels[allocation] = nil
                creditedAllocations.remove(allocation)
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

    private func takeOffloaded(_ allocation: Int, _ number: UInt16, _ channel: OffloadedChannel) {
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
