import NetAddress

/// The accounting record of a forward-rule client that ends, built as it is removed.
extension ForwardRuleTable {
    /// Hands client `index`'s record to `accounting` (if any). Two sides: the client (reached
    /// from the rule's listen address) and the upstream (reached from the client's own port).
    func account(_ index: Int, _ state: ClientState, _ reason: EndReason) {
        guard let accounting else { return }
        let rule = rules[Int(state.rule)].rule
        let counters = clientCounters[index]
        var client = AccountingSide(name: "client", remote: state.source, local: [rule.listen])
        client.packetsIn = counters.up.packets
        client.bytesIn = counters.up.bytes
        client.packetsOut = counters.down.packets
        client.bytesOut = counters.down.bytes
        client.ecnIn = counters.up.ecnReceived
        client.ecnOut = counters.down.ecnSent
        // The upstream socket is bound to the wildcard address of the upstream's family.
        let local = rule.upstream.isIPv4 ? Endpoint(ipv4: 0, port: state.port) : Endpoint(high: 0, low: 0, port: state.port)
        var upstream = AccountingSide(name: "upstream", remote: rule.upstream, local: [local])
        upstream.packetsIn = counters.down.packets
        upstream.bytesIn = counters.down.bytes
        upstream.packetsOut = counters.up.packets
        upstream.bytesOut = counters.up.bytes
        upstream.ecnIn = counters.down.ecnReceived
        upstream.ecnOut = counters.up.ecnSent
        let span = AccountingRecord.span(created: state.created, now: now)
        accounting(AccountingRecord(kind: .forwardClient, id: rule.listen.description, transport: .udp,
                                    startNanoseconds: span.start, durationNanoseconds: span.duration,
                                    sides: [client, upstream], ceMarked: counters.up.ceMarked &+ counters.down.ceMarked,
                                    drops: counters.drops.nonZero, reason: reason))
    }
}
