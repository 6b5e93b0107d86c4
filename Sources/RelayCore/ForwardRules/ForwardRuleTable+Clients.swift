import DatagramEngine
import NetAddress

/// Forward-rule clients coming and going: a new source gets an upstream socket (on its first
/// datagram), an idle one loses it (housekeeping), all of them when the worker stops.
extension ForwardRuleTable {
    /// A new client of `rule`: refused (and counted) beyond the rule's cap or when no port is free.
    func addClient(_ rule: Int, _ source: Endpoint, localAddress: Endpoint) -> Int? {
        let shared = rules[rule].shared
        if shared.clients.add(1, ordering: .relaxed).newValue > shared.maxClients.load(ordering: .relaxed) {
            shared.clients.subtract(1, ordering: .relaxed)
            drops.add(.clientCap)
            return nil
        }
        let wildcard = rules[rule].rule.upstream.isIPv4 ? Endpoint(ipv4: 0, port: 0) : Endpoint(high: 0, low: 0, port: 0)
        guard case .success(let opened) = opener.open(near: wildcard, for: .client), let (socket, port) = opened.first else {
            shared.clients.subtract(1, ordering: .relaxed)
            drops.add(.noPort)
            return nil
        }
        let index = freeClients.popLast().map(Int.init) ?? clients.count
        let state = ClientState(rule: Int32(rule), source: source, upstreamSocket: socket, port: port, lastHeard: now,
                                created: now, localAddress: localAddress)
        if index < clients.count { clients[index] = state } else { clients.append(state) }
        if index < clientCounters.count { clientCounters[index] = ForwardClientCounters() } else { clientCounters.append(ForwardClientCounters()) }
        clientsByRule[rule][source] = Int32(index)
        engine.setOwner(socket, OwnerTag(.upstream, Int32(index)))
        clientCount += 1
        clientsCreated &+= 1
        return index
    }

    func removeClient(_ index: Int32, _ reason: EndReason) {
        guard clients[Int(index)] != nil else { return }
        takeOffloaded(Int(index))
        let state = clients[Int(index)]!
        account(Int(index), state, reason)
        engine.unregister([state.upstreamSocket])
        settings.ports.release(state.port, from: .client)
        clientsByRule[Int(state.rule)][state.source] = nil
        if routes[Int(state.rule)].lastClient == index { routes[Int(state.rule)].lastClient = -1 }
        rules[Int(state.rule)].shared.clients.subtract(1, ordering: .relaxed)
        clients[Int(index)] = nil
        freeClients.append(index)
        clientCount -= 1
    }

    func expireClients() {
        if !offloaded.isEmpty { refreshOffloaded() }
        for index in clients.indices {
            guard let state = clients[index] else { continue }
            let timeout = UInt64(rules[Int(state.rule)].shared.idleTimeoutSeconds.load(ordering: .relaxed)) * 1_000_000_000
            if now &- lastHeard(index, state) > timeout {
                removeClient(Int32(index), .idle)
                clientsExpired &+= 1
            }
        }
    }

    /// Closes every client's upstream socket (the worker is stopping).
    func shutDown() {
        for index in clients.indices where clients[index] != nil { removeClient(Int32(index), .shutdown) }
    }
}
