import DatagramEngine
import FastPath
import NetAddress
import STUN

/// One channel the kernel carries: its two entries, and when they stop forwarding (the
/// earliest of the channel's, its permission's and its allocation's end).
struct OffloadedChannel: Equatable {
    var pair: OffloadedPair
    var expires: UInt64
    /// What each direction spent of its credit in the last round (`TurnTable+Credit` shares an
    /// allocation's credit out by it).
    var forwardSpent: UInt64 = 0
    var backwardSpent: UInt64 = 0
}

/// TURN channels in the kernel fast path (RFC 8656 section 12 both ways): ChannelData from the
/// client loses its header and goes to the peer from the relayed address; the peer's datagrams
/// gain it and go to the client from the address it reached. Entries are written after a
/// ChannelBind, CreatePermission or Refresh succeeds and before its answer leaves, so the
/// first ChannelData after the success already finds its entry; each carries the channel's
/// end, so the kernel stops forwarding when user space would, even if user space stalls.
/// What the kernel does not do the same way stays here: clients over TCP or TLS, Send and Data
/// indications, peers of the other family than the client. An allocation with a bandwidth
/// quota, and every allocation under the egress cap, is forwarded on credit
/// (`TurnTable+Credit`): the kernel carries what the buckets would pass unmarked, and hands
/// the rest to the user-space policers.
extension TurnTable {
    /// Writes the entries of every channel of `client`'s allocation as they now stand, and
    /// takes out those of channels it no longer has.
    func offloadChannels(of client: TurnClient) {
        guard let offload, !client.isStream, let allocation = store.index(of: client) else { return }
        let now = clock.now
        var wanted: [UInt16: OffloadedChannel] = [:]
        let credited = store[allocation].bandwidth.isLimited || packets.egress.isOn
        if let local = listenerAddress(client) {
            for binding in store[allocation].channels.entries where binding.expires > now && binding.permissionExpires > now {
                guard let relayed = relayedAddress(allocation, toward: binding.peer) else { continue }
                let expires = min(binding.expires, binding.permissionExpires, store[allocation].expires)
                let pair = OffloadedPair(forward: FlowKey(source: client.address, destination: local, channel: binding.number),
                                         backward: FlowKey(source: binding.peer, destination: relayed), written: now,
                                         forwardCredit: credited ? 0 : nil, backwardCredit: credited ? 0 : nil)
                wanted[binding.number] = OffloadedChannel(pair: pair, expires: expires)
            }
        }
        let had = offloadedChannels[allocation] ?? [:]
        for (number, old) in had where !(wanted[number].map { old.pair.sameKeys($0.pair) } ?? false) {
            takeOffloaded(allocation, number, old)
        }
        var kept: [UInt16: OffloadedChannel] = [:]
        for (number, var channel) in wanted {
            if let old = had[number], old.pair.sameKeys(channel.pair) {
                // A rewrite keeps the kernel's credit: so does the record of what was granted.
                channel.pair.forwardCredit = old.pair.forwardCredit
                channel.pair.backwardCredit = old.pair.backwardCredit
                if old.expires == channel.expires {
                    kept[number] = old
                    continue
                }
            }
            let policy = settings.marking
            let key = channel.pair
            // Towards the peer from the relayed socket (DF as the Allocate asked), towards the
            // client from the listener (the kernel's default, DF set).
            guard offload.install(key.forward, .relay(from: key.backward.destination, to: key.backward.source, kind: .stripChannel(number),
                                                      policy: policy, expiresAt: channel.expires, credited: credited,
                                                      dontFragment: store[allocation].dontFragment)),
                  offload.install(key.backward, .relay(from: key.forward.destination, to: client.address, kind: .addChannel(number),
                                                       policy: policy, expiresAt: channel.expires, credited: credited)) else {
                takeOffloaded(allocation, number, channel)
                continue
            }
            kept[number] = channel
        }
        offloadedChannels[allocation] = kept.isEmpty ? nil : kept
        if credited && !kept.isEmpty {
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
