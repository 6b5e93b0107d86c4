import FastPath
import NetAddress

/// Forward-rule clients in the kernel fast path: once user space has taken a client on (its
/// first datagram gave it an upstream socket), both directions go into the kernel, so its
/// later datagrams never reach the worker. A client whose rewrite would change family stays in
/// user space (the kernel refuses it). Under the egress cap its entries are forwarded on
/// credit: the kernel carries its share of what the cap would pass unmarked, and hands the
/// rest to the user-space policer.
extension ForwardRuleTable {
    /// Writes `client`'s two entries, or writes them again (a refresh keeps their counters).
    func offloadClient(_ client: Int) {
        guard let offload, let state = clients[client] else { return }
        let rule = Int(state.rule)
        let listen = rules[rule].rule.listen
        guard let local = OffloadAddress.local(bound: listen, reached: state.localAddress, port: listen.port),
              var upstreamLocal = upstreamSource(rule) else { return }
        upstreamLocal.port = state.port
        let upstream = routes[rule].upstream
        let policy = routes[rule].policy
        let idle = idleTimeout(rule)
        let credited = egress.isOn
        var pair = OffloadedPair(forward: FlowKey(source: state.source, destination: local),
                                 backward: FlowKey(source: upstream, destination: upstreamLocal), written: now, idleTimeout: idle,
                                 forwardCredit: credited ? 0 : nil, backwardCredit: credited ? 0 : nil)
        if let old = offloaded[Int32(client)] {
            if old.sameKeys(pair) {
                // A rewrite keeps the kernel's credit: so does the record of what was granted.
                pair.forwardCredit = old.forwardCredit
                pair.backwardCredit = old.backwardCredit
            } else {
                takeOffloaded(client)
            }
        }
        guard offload.install(pair.forward, .relay(from: upstreamLocal, to: upstream, policy: policy, idleTimeout: idle, credited: credited)),
              offload.install(pair.backward, .relay(from: local, to: state.source, policy: policy, idleTimeout: idle,
                                                    credited: credited)) else {
            offloaded[Int32(client)] = pair
            takeOffloaded(client)
            return
        }
        offloaded[Int32(client)] = pair
    }

    /// Takes `client`'s entries out of the kernel and adds what they carried to its counters.
    func takeOffloaded(_ client: Int) {
        guard let offload, var pair = offloaded.removeValue(forKey: Int32(client)) else { return }
        if pair.isCredited { egress.giveBack(pair.settleCredit(offload).left) }
        let counts = pair.remove(from: offload)
        let copied = routes[Int(clients[client]!.rule)].policy.ecn == .preserve
        if let up = counts.forward { clientCounters[client].up.add(up, copied: copied) }
        if let down = counts.backward { clientCounters[client].down.add(down, copied: copied) }
    }

    /// How many directions are forwarded on credit (under the egress cap, all).
    var creditedDirections: Int { egress.isOn ? 2 * offloaded.count : 0 }

    /// Takes back every entry's credit under the egress cap; returns what was left in all.
    func settleCredit() -> UInt64 {
        guard let offload, egress.isOn else { return 0 }
        var left: UInt64 = 0
        for (client, var pair) in offloaded {
            left &+= pair.settleCredit(offload).left
            offloaded[client] = pair
        }
        return left
    }

    /// Grants every entry `egressShare` (the cap's share); returns the total granted.
    func grantCredit(egressShare: UInt64?) -> UInt64 {
        guard let offload, let egressShare else { return 0 }
        var granted: UInt64 = 0
        for (client, var pair) in offloaded {
            pair.forwardCredit = offload.grant(pair.forward, egressShare)
            pair.backwardCredit = offload.grant(pair.backward, egressShare)
            granted &+= 2 &* UInt64(pair.forwardCredit!)
            offloaded[client] = pair
        }
        return granted
    }

    /// When `client` was last heard, by user space or by the kernel.
    func lastHeard(_ client: Int, _ state: ClientState) -> UInt64 {
        guard let offload, let pair = offloaded[Int32(client)] else { return state.lastHeard }
        // The kernel's clock may have passed the turn's time: never later than now.
        return min(max(state.lastHeard, pair.lastForwarded(offload)), now)
    }

    /// Writes again the entries of every client user space heard since they were written (the
    /// kernel handed its datagrams back), so a flow idle past its timeout in the kernel and
    /// then heard again goes back to the kernel; and of every client whose rule's idle timeout
    /// a reload changed.
    func refreshOffloaded() {
        for (client, pair) in offloaded {
            guard let state = clients[Int(client)] else { continue }
            if state.lastHeard > pair.written || pair.idleTimeout != idleTimeout(Int(state.rule)) { offloadClient(Int(client)) }
        }
    }

    private func idleTimeout(_ rule: Int) -> UInt64 {
        UInt64(rules[rule].shared.idleTimeoutSeconds.load(ordering: .relaxed)) &* 1_000_000_000
    }

    /// The address a rule's upstream sockets send from: they are bound to a wildcard address,
    /// so it is the one the route to the upstream picks.
    private func upstreamSource(_ rule: Int) -> Endpoint? {
        if let known = upstreamSources[rule] { return known }
        let found = OffloadAddress.routeSource(toward: routes[rule].upstream)
        upstreamSources[rule] = found
        return found
    }
}

extension ForwardClientCounters.Direction {
    /// Adds what the kernel carried for this direction.
    mutating func add(_ kernel: FlowCounters, copied: Bool) {
        bytes &+= kernel.bytes
        for (received, sent, count) in kernel.ecnPairs(copied: copied) { ecn[received << 2 | sent] &+= count }
    }
}
