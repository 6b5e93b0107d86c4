import FastPath
import NetAddress

/// Session pairs in the kernel fast path: once both legs of a pair (or both RTCP companions)
/// have latched, each direction goes into the kernel, and a relatch writes them again. What
/// the kernel does not do the same way stays in user space: fan-out (one datagram to several
/// legs); a rewrite that would change family is refused by the kernel. A leg with a limit,
/// and every leg under the egress cap, is forwarded on credit (`SessionTable+Credit`): the
/// kernel carries what the buckets would pass unmarked, and hands the rest to the user-space
/// policers.
extension SessionTable {
    /// Writes the entries of the pair `leg` belongs to, when both its legs are latched. A leg
    /// with a limit is forwarded on credit (`grantCredit`).
    func offloadPair(of leg: Int) {
        guard let offload, legs[leg].legCount == 2 else { return }
        let first = Int(legs[leg].firstLeg)
        let a = first, b = first + 1
        guard let peerA = legs[a].latched, let peerB = legs[b].latched,
              let localA = localAddress(a), let localB = localAddress(b),
              let session = sessions[Int(legs[leg].session)] else { return }
        var pair = OffloadedPair(forward: FlowKey(source: peerA, destination: localA),
                                 backward: FlowKey(source: peerB, destination: localB), written: now,
                                 idleTimeout: session.idleTimeout,
                                 forwardCredit: isCredited(a) ? 0 : nil, backwardCredit: isCredited(b) ? 0 : nil,
                                 forwardPackets: legs[a].limits.packets.isLimited ? 0 : nil,
                                 backwardPackets: legs[b].limits.packets.isLimited ? 0 : nil)
        if let old = offloaded[Int32(first)] {
            if old.sameKeys(pair) {
                // A rewrite keeps the kernel's credit: so does the record of what was granted.
                pair.forwardCredit = old.forwardCredit
                pair.backwardCredit = old.backwardCredit
                pair.forwardPackets = old.forwardPackets
                pair.backwardPackets = old.backwardPackets
            } else {
                takeOffloaded(group: first)
            }
        }
        offloaded[Int32(first)] = pair
        let idle = session.idleTimeout
        guard offload.install(pair.forward, .relay(from: localB, to: peerB, policy: legs[a].policy, idleTimeout: idle,
                                                   credited: pair.forwardCredit != nil, packetCredited: pair.forwardPackets != nil)),
              offload.install(pair.backward, .relay(from: localA, to: peerA, policy: legs[b].policy, idleTimeout: idle,
                                                    credited: pair.backwardCredit != nil,
                                                    packetCredited: pair.backwardPackets != nil)) else {
            return takeOffloaded(group: first)
        }
        if pair.isCredited {
            creditedPairs.insert(Int32(first))
            // Under the egress cap the next round grants it (the cap is shared by all).
            if !egress.isOn { grantCredit(group: first, egressShare: nil) }
        }
    }

    /// Takes the entries of the pair whose first leg is `first` out of the kernel, charges
    /// the credit they spent to their legs' limits and adds what they carried to their legs'
    /// counters.
    func takeOffloaded(group first: Int) {
        guard let offload, var pair = offloaded.removeValue(forKey: Int32(first)) else { return }
        if pair.isCredited {
            egress.giveBack(settle(&pair, group: first))
            creditedPairs.remove(Int32(first))
        }
        let counts = pair.remove(from: offload)
        if let forward = counts.forward { add(forward, from: first, to: first + 1) }
        if let backward = counts.backward { add(backward, from: first + 1, to: first) }
    }

    /// What the kernel carried so far for the pair whose first leg is `first`, added to
    /// copies of its legs' counters (for a description; the entries stay).
    func countersWithKernel(_ leg: Int) -> LegCounters {
        var counters = legs[leg].counters
        let first = Int(legs[leg].firstLeg)
        guard let offload, let pair = offloaded[Int32(first)] else { return counters }
        let (arriving, leaving) = leg == first ? (pair.forward, pair.backward) : (pair.backward, pair.forward)
        if let kernel = offload.counters(arriving) { counters.addReceived(kernel) }
        if let kernel = offload.counters(leaving) { counters.addSent(kernel) }
        return counters
    }

    /// When `leg` was last heard, by user space or by the kernel, never later than now.
    func lastHeard(_ leg: Int) -> UInt64 {
        let first = Int(legs[leg].firstLeg)
        guard let offload, let pair = offloaded[Int32(first)] else { return legs[leg].lastHeard }
        let kernel = offload.lastForwarded(leg == first ? pair.forward : pair.backward) ?? 0
        return min(max(legs[leg].lastHeard, kernel), now)
    }

    /// Writes again the entries of every pair user space heard since they were written (the
    /// kernel handed its datagrams back, for instance idle past the timeout in the kernel).
    func refreshOffloaded() {
        for (first, pair) in offloaded {
            let first = Int(first)
            if legs[first].lastHeard > pair.written || legs[first + 1].lastHeard > pair.written { offloadPair(of: first) }
        }
    }

    private func add(_ kernel: FlowCounters, from arriving: Int, to leaving: Int) {
        legs[arriving].counters.addReceived(kernel)
        legs[leaving].counters.addSent(kernel)
    }

    /// The relay's address `leg`'s peer sends to, with the leg's port.
    private func localAddress(_ leg: Int) -> Endpoint? {
        OffloadAddress.local(bound: settings.relayAddress, reached: legs[leg].localAddress, port: legs[leg].address.port)
    }
}

extension LegCounters {
    mutating func addReceived(_ kernel: FlowCounters) {
        packetsIn &+= kernel.packets
        bytesIn &+= kernel.bytes
        for codepoint in 0..<4 { ecnIn[codepoint] &+= kernel.ecnIn[codepoint] }
    }

    mutating func addSent(_ kernel: FlowCounters) {
        packetsOut &+= kernel.packets
        bytesOut &+= kernel.bytes
        for codepoint in 0..<4 { ecnOut[codepoint] &+= kernel.ecnOut[codepoint] }
    }
}
