import ClientSockets
import JSONSyntax
import StatsKeys

/// The figures of the relay's GET /v1/stats that a run needs (the stats contract: README, "Stats").
public struct RelayStats: Sendable, Equatable {
    public var engine: String
    public var packetsIn: Double
    public var packetsOut: Double
    public var cpuUserSeconds: Double
    public var cpuSystemSeconds: Double
    public var syscalls: Double
    /// How it batched; nil for the C reference forwarder and relays that do not say.
    public var batching: BatchCounters?

    public init(engine: String, packetsIn: Double, packetsOut: Double, cpuUserSeconds: Double, cpuSystemSeconds: Double, syscalls: Double,
                batching: BatchCounters? = nil) {
        self.engine = engine
        self.packetsIn = packetsIn
        self.packetsOut = packetsOut
        self.cpuUserSeconds = cpuUserSeconds
        self.cpuSystemSeconds = cpuSystemSeconds
        self.syscalls = syscalls
        self.batching = batching
    }

    /// Parses the JSON body; throws naming the first missing or mistyped field.
    public init(json: [UInt8]) throws(LoadError) {
        let object: JSONValue
        do {
            object = try JSONValue(parsing: json)
        } catch {
            throw LoadError("/v1/stats: answer is not JSON (\(error))")
        }
        guard object.members != nil else { throw LoadError("/v1/stats: answer is \(object.typeName), not a JSON object") }
        func number(_ key: String) throws(LoadError) -> Double {
            guard let n = object[key]?.double else { throw LoadError("/v1/stats: field \(key) missing or not a number") }
            return n
        }
        engine = object[StatsKey.engine]?.string ?? "unknown"
        packetsIn = try number(StatsKey.packetsIn)
        packetsOut = try number(StatsKey.packetsOut)
        cpuUserSeconds = try number(StatsKey.cpuUserSeconds)
        cpuSystemSeconds = try number(StatsKey.cpuSystemSeconds)
        syscalls = try number(StatsKey.syscalls)
        batching = BatchCounters(object)
    }

    public var cpuSeconds: Double { cpuUserSeconds + cpuSystemSeconds }
}

/// What the relay did between two /v1/stats reads.
public struct RelayDelta: Sendable, Equatable {
    public let engine: String
    public let packetsIn: Double
    public let packetsOut: Double
    public let cpuSeconds: Double
    public let syscalls: Double
    public let batching: BatchCounters?

    public init(before: RelayStats, after: RelayStats) {
        engine = after.engine
        packetsIn = after.packetsIn - before.packetsIn
        packetsOut = after.packetsOut - before.packetsOut
        cpuSeconds = after.cpuSeconds - before.cpuSeconds
        syscalls = after.syscalls - before.syscalls
        batching = after.batching.flatMap { later in before.batching.map { later.since($0) } }
    }

    /// Δcpu × 1e9 / Δpackets_in; NaN when no packet came in.
    public var cpuNsPerPacket: Double { packetsIn > 0 ? cpuSeconds * 1e9 / packetsIn : .nan }
    /// Δsyscalls / Δpackets_in; NaN when no packet came in.
    public var syscallsPerPacket: Double { packetsIn > 0 ? syscalls / packetsIn : .nan }
}
