/// What a table forwarding flows on credit in the kernel offers a round of credit.
protocol CreditedTable: AnyObject {
    /// How many of its entries are forwarded on credit.
    var creditedDirections: Int { get }
    /// Takes back every credited entry's credit, charges what was spent to the flows' own
    /// limits, and returns what was left in all.
    func settleCredit() -> UInt64
    /// Grants every credited entry what its own limit allows now, at most `egressShare` (nil:
    /// no egress cap); returns the total granted.
    func grantCredit(egressShare: UInt64?) -> UInt64
}

/// One round of credit for a worker's kernel entries, every 20 ms of its turns: what the
/// kernel spent is settled, what it left goes back to the egress cap, and each entry gets what
/// its own limit allows now, at most an equal share of what the cap would pass unmarked
/// (`EgressShare.takeForKernel`); what the entries were not granted of that share goes back.
/// Past its credit the kernel hands a flow's datagrams back, and the user-space policers mark
/// and drop them as they always have.
enum CreditRound {
    static func run(_ tables: [any CreditedTable], egress: EgressShare, now: UInt64, thresholds: ECNThresholds) {
        var directions = 0
        for table in tables { directions += table.creditedDirections }
        guard directions > 0 else { return }
        var left: UInt64 = 0
        for table in tables { left &+= table.settleCredit() }
        var share: UInt64?
        var taken: UInt64 = 0
        if egress.isOn {
            egress.giveBack(left)
            taken = egress.takeForKernel(now: now, thresholds: thresholds)
            share = taken / UInt64(directions)
        }
        var granted: UInt64 = 0
        for table in tables { granted &+= table.grantCredit(egressShare: share) }
        if taken > granted { egress.giveBack(taken &- granted) }
    }
}

extension SessionTable: CreditedTable {}
extension ForwardRuleTable: CreditedTable {}
extension TurnTable: CreditedTable {}
