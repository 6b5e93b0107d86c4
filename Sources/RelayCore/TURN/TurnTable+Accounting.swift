/// The accounting record of an allocation that ends, built from its counters as it is removed.
extension TurnTable {
    /// Hands allocation `a`'s record to `accounting` (if any). Two sides: the client (what it
    /// sent that was relayed, what it was sent) and its peers through the relayed addresses.
    /// Bytes are payload bytes (without ChannelData or Send/Data framing), as in the stats.
    func account(_ a: Int, _ reason: EndReason) {
        guard let accounting else { return }
        let allocation = allocations[a]
        let counters = allocation.counters
        let fromClient = counters.channelDataIn &+ counters.indicationsIn
        let toClient = counters.channelDataOut &+ counters.indicationsOut
        // A stream carries no codepoint per message: what reached a TCP or TLS client was Not-ECT.
        let ecnToClient = allocation.transport == .udp ? AccountingSide.codepoints(counters.ecnToClient) : [toClient, 0, 0, 0]
        let client = AccountingSide(name: "client", remote: allocation.client.address, local: [],
                                    in: (fromClient, counters.bytesToPeers, AccountingSide.codepoints(counters.ecnFromClient)),
                                    out: (toClient, counters.bytesToClient, ecnToClient))
        let peers = AccountingSide(name: "peers", remote: nil, local: [allocation.relay4, allocation.relay6].compactMap { $0?.advertised },
                                   in: (toClient, counters.bytesToClient, AccountingSide.codepoints(counters.ecnFromPeers)),
                                   out: (fromClient, counters.bytesToPeers, AccountingSide.codepoints(counters.ecnToPeers)))
        let drops = TurnDropReason.allCases.compactMap { reason in
            counters.drops[reason.rawValue] > 0 ? (reason: reason.name, count: counters.drops[reason.rawValue]) : nil
        }
        let span = AccountingRecord.span(created: allocation.created, now: now)
        accounting(AccountingRecord(kind: .allocation, id: allocation.username, transport: allocation.transport,
                                    startNanoseconds: span.start, durationNanoseconds: span.duration, sides: [client, peers],
                                    ceMarked: counters.ceMarked.total, drops: drops, reason: reason))
    }
}
