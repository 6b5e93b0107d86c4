/// The accounting record of a session that ends, built from its legs' counters as it goes.
extension SessionTable {
    /// Hands `session`'s record to `accounting` (if any): one side per leg (`leg0`, `leg1`...,
    /// and `rtcp0`... for the RTCP companions of an `"rtcp": "pair"` session), each with the
    /// leg's address, the peer it latched onto and what it received and sent; CE marks and
    /// drops summed over the legs.
    func account(_ session: SessionState, _ reason: EndReason) {
        guard let accounting else { return }
        let first = Int(session.firstLeg)
        var sides: [AccountingSide] = []
        var ceMarked: UInt64 = 0
        var drops = DropCounts()
        for slot in 0..<session.slotCount {
            let leg = legs[first + slot]
            let name = slot < session.request.legs ? "leg\(slot)" : "rtcp\(slot - session.request.legs)"
            let counters = leg.counters
            sides.append(AccountingSide(name: name, remote: leg.latched, local: [leg.address],
                                        in: (counters.packetsIn, counters.bytesIn, AccountingSide.codepoints(counters.ecnIn)),
                                        out: (counters.packetsOut, counters.bytesOut, AccountingSide.codepoints(counters.ecnOut))))
            ceMarked &+= leg.counters.ceMarked.total
            drops.merge(leg.counters.drops)
        }
        let span = AccountingRecord.span(created: session.created, now: now)
        accounting(AccountingRecord(kind: .session, id: session.id, transport: .udp, startNanoseconds: span.start,
                                    durationNanoseconds: span.duration, sides: sides, ceMarked: ceMarked,
                                    drops: drops.nonZero, reason: reason))
    }
}
