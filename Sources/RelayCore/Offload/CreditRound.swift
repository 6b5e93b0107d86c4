/// One round of credit for a worker's kernel entries, every 20 ms of its turns: what the
/// kernel spent is settled, what it left goes back to the egress cap, and each entry gets what
/// its own limit allows now, at most an equal share of what the cap would pass unmarked
/// (`EgressShare.takeForKernel`); what the entries were not granted of that share goes back.
/// Past its credit the kernel hands a flow's datagrams back, and the user-space policers mark
/// and drop them as they always have.
enum CreditRound {
    /// How often a worker runs a round while it has flows on credit.
    static let intervalNanoseconds: UInt64 = 20_000_000

    /// One round over a worker's tables (any of them nil when a test has only some), called
    /// with their concrete types: it runs every 20 ms of a worker's turns.
    static func run<Engine: TableEngine>(sessions: SessionTable<Engine>?, forwardRules: ForwardRuleTable<Engine>?,
                                         turn: TurnTable<Engine>?, egress: EgressShare, now: UInt64, thresholds: ECNThresholds) {
        let directions = (sessions?.creditedDirections ?? 0) + (forwardRules?.creditedDirections ?? 0) + (turn?.creditedDirections ?? 0)
        guard directions > 0 else { return }
        let left = (sessions?.settleCredit() ?? 0) &+ (forwardRules?.settleCredit() ?? 0) &+ (turn?.settleCredit() ?? 0)
        var share: UInt64?
        var taken: UInt64 = 0
        if egress.isOn {
            egress.giveBack(left)
            taken = egress.takeForKernel(now: now, thresholds: thresholds)
            share = taken / UInt64(directions)
        }
        let granted = (sessions?.grantCredit(egressShare: share) ?? 0) &+ (forwardRules?.grantCredit(egressShare: share) ?? 0)
            &+ (turn?.grantCredit(egressShare: share) ?? 0)
        if taken > granted { egress.giveBack(taken &- granted) }
    }
}
