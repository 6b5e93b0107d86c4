import LoadGen

/// A check's outcome: the aim is met or not with the median's interval wholly on one side of
/// it, or the interval still holds the aim when the repeats stopped.
public enum Verdict: String, Sendable, Equatable {
    case met
    case notMet = "not met"
    case inconclusive
}

/// One of `compare`'s checks: an engine against a baseline at one load, judged on the figure of
/// each repeat round in which both ran (paired, so drift between rounds falls on both sides).
public struct Check: Sendable, Equatable {
    public enum Aim: Sendable, Equatable {
        /// CPU per datagram saved against the baseline, in percent: at least this much.
        case savingAtLeast(Double)
        /// The engine's p99 latency minus the baseline's, in microseconds: at most this much.
        case addedLatencyAtMost(Double)
    }

    public let engine: String
    public let baseline: String
    public let load: LoadPoint
    public let aim: Aim

    public init(engine: String, baseline: String, load: LoadPoint, aim: Aim) {
        self.engine = engine
        self.baseline = baseline
        self.load = load
        self.aim = aim
    }

    /// The widest spread of the median at which repeating stops although its interval still
    /// holds the aim (the verdict is then inconclusive: the figure is too near the aim to call).
    /// Why these bounds: bench/README.md, "make demo".
    public var spreadBound: Double {
        switch aim {
        case .savingAtLeast: Self.savingBound
        case .addedLatencyAtMost: Self.latencyBound
        }
    }

    /// Percentage points of CPU saved, and microseconds of p99.
    public static let savingBound = 10.0
    public static let latencyBound = 40.0

    /// The checked figure of each round in which both sides were measured, in round order.
    public func samples(_ records: [RunRecord]) -> [Double] {
        let value: (RunRecord) -> Double?
        switch aim {
        case .savingAtLeast: value = \.relayCPUUsPerDatagram
        case .addedLatencyAtMost: value = \.p99Us
        }
        var mine: [Int: Double] = [:], theirs: [Int: Double] = [:]
        for r in records where r.run.load == load {
            if r.run.engine.name == engine { mine[r.run.repeatIndex] = value(r) }
            if r.run.engine.name == baseline { theirs[r.run.repeatIndex] = value(r) }
        }
        return mine.keys.sorted().compactMap { round in
            guard let a = mine[round], let b = theirs[round], a.isFinite, b.isFinite else { return nil }
            switch aim {
            case .savingAtLeast: return b > 0 ? (1 - a / b) * 100 : nil
            case .addedLatencyAtMost: return a - b
            }
        }
    }

    /// Met or not met when the interval lies wholly on one side of the aim, else inconclusive.
    public func verdict(_ interval: MedianInterval) -> Verdict { verdict(interval, margin: 0) }

    /// The verdict when the interval clears the aim by at least `margin` as well, else
    /// inconclusive.
    func verdict(_ interval: MedianInterval, margin: Double) -> Verdict {
        switch aim {
        case .savingAtLeast(let least):
            if interval.low >= least + margin { return .met }
            if interval.high < least - margin { return .notMet }
        case .addedLatencyAtMost(let most):
            if interval.high <= most - margin { return .met }
            if interval.low > most + margin { return .notMet }
        }
        return .inconclusive
    }
}

/// When to stop repeating a check, after at least `minimum` rounds: its interval reaches the
/// confidence (`MedianInterval.confidence`) and lies clear of the aim or within its spread
/// bound; or, on fewer repeats than that (the interval is then the whole range, and a check
/// whose figure sits at the aim has all of three repeats on one side one time in four), its
/// range clears the aim by half the bound. Or `maximum` rounds have run. The verdict reported
/// is `Check.verdict` of the interval as it stands, whichever way the repeating stopped.
public struct StoppingRule: Sendable, Equatable {
    public var minimum: Int
    public var maximum: Int

    public init(minimum: Int, maximum: Int) {
        self.minimum = minimum
        self.maximum = max(minimum, maximum)
    }

    /// Whether `check` needs no more rounds after `rounds` of them.
    public func settled(_ check: Check, _ interval: MedianInterval?, rounds: Int) -> Bool {
        if rounds >= maximum { return true }
        guard rounds >= minimum, let interval else { return false }
        guard interval.coverage >= MedianInterval.confidence else {
            return check.verdict(interval, margin: check.spreadBound / 2) != .inconclusive
        }
        return check.verdict(interval) != .inconclusive || interval.spread <= check.spreadBound
    }

    /// Whether the load of `checks` (all at one load) needs no more rounds.
    public func settled(_ checks: [Check], records: [RunRecord], rounds: Int) -> Bool {
        unsettled(checks, records: records, rounds: rounds).isEmpty
    }

    /// The checks that need another round after `rounds` (none before the minimum counts as
    /// settled; at the maximum, none is left).
    public func unsettled(_ checks: [Check], records: [RunRecord], rounds: Int) -> [Check] {
        if rounds >= maximum { return [] }
        return checks.filter { !settled($0, MedianInterval($0.samples(records)), rounds: rounds) }
    }
}

extension Check {
    /// The aims, at the loads and engines that run: batching must not cost latency (p99
    /// at the latency load within `latencyAim` us of perpacket's), and at 50k datagrams/s and
    /// above batched engines save at least 25 % of CPU per datagram, GSO at least 40 %, against
    /// our per-packet backend and, when it runs, the C per-packet forwarder.
    public static func standard(loads: [LoadPoint], engines: [String]) -> [Check] {
        let batched: [(String, Double)] = [("mmsg", 25), ("uring", 25), ("uring+gso", 40)].filter { engines.contains($0.0) }
        var checks: [Check] = []
        if let load = loads.first(where: { $0 == latencyLoad }), engines.contains("perpacket") {
            checks += batched.map { Check(engine: $0.0, baseline: "perpacket", load: load, aim: .addedLatencyAtMost(latencyAim)) }
        }
        let baselines = ["perpacket", EngineSetting.cPerPacket.name].filter { engines.contains($0) }
        for load in loads where load.offeredRate >= 50_000 {
            for baseline in baselines {
                checks += batched.map { Check(engine: $0.0, baseline: baseline, load: load, aim: .savingAtLeast($0.1)) }
            }
        }
        return checks
    }

    /// Where batching must not cost latency: a low rate, where a batch rarely holds more than
    /// one datagram and any wait for a fuller one would show.
    public static let latencyLoad = LoadPoint.constant(10_000)
    public static let latencyAim = 50.0
}
