import NetAddress

/// The accounting record of a forward-rule client that ends, built as it is removed.
extension ForwardRuleTable {
    /// Hands client `index`'s record to `accounting` (if any). Two sides: the client (reached
    /// from the rule's listen address) and the upstream (reached from the client's own port).
    func account(_ index: Int, _ state: ClientState, _ reason: EndReason) {
        guard let accounting else { return }
        let rule = rules[Int(state.rule)].rule
        let counters = clientCounters[index]
        let (up, down) = (counters.up, counters.down)
        let client = AccountingSide(name: "client", remote: state.source, local: [rule.listen],
                                    in: (up.packets, up.bytes, up.ecnReceived),
                                    out: (down.packets, down.bytes, down.ecnSent))
        // The upstream socket is bound to the wildcard address of the upstream's family.
        let local = rule.upstream.isIPv4 ? Endpoint(ipv4: 0, port: state.port) : Endpoint(high: 0, low: 0, port: state.port)
        let upstream = AccountingSide(name: "upstream", remote: rule.upstream, local: [local],
                                      in: (down.packets, down.bytes, down.ecnReceived),
                                      out: (up.packets, up.bytes, up.ecnSent))
        let span = AccountingRecord.span(created: state.created, now: now)
        accounting(AccountingRecord(kind: .forwardClient, id: rule.listen.description, transport: .udp,
                                    startNanoseconds: span.start, durationNanoseconds: span.duration,
                                    sides: [client, upstream], ceMarked: up.ceMarked &+ down.ceMarked,
                                    drops: counters.drops.nonZero, reason: reason))
    }
}
