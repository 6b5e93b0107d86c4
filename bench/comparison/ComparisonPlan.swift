import LoadGen
/// A relay configuration under comparison: its label and the server flags that select it.
public struct EngineSetting: Sendable, Equatable {
    public let name: String
    public let arguments: [String]
    /// The relay's --workers.
    public var workers = 1
    /// The C reference forwarder (bench/reference/forwarder.c) instead of the relay: the same
    /// loop written in plain C, the limit the relay's backend is measured against.
    public var reference = false
    /// For a C reference: the relay setting whose backend, GSO and GRO it runs with, the row
    /// it is compared with run by run.
    public var counterpart: String?
    /// The profiles this setting runs at (nil: every load).
    public var profiles: [TrafficProfile]?

    public init(name: String, arguments: [String], reference: Bool = false, counterpart: String? = nil,
                profiles: [TrafficProfile]? = nil) {
        self.name = name
        self.arguments = arguments
        self.reference = reference
        self.counterpart = counterpart
        self.profiles = profiles
    }

    public func runs(at load: LoadPoint) -> Bool { profiles?.contains(load.profile) ?? true }

    /// perpacket, mmsg and uring with GSO and GRO off, so batching alone is measured; then
    /// uring with GSO.
    public static let all: [EngineSetting] = [
        EngineSetting(name: "perpacket", arguments: ["--engine", "perpacket", "--gso", "off", "--gro", "off"]),
        EngineSetting(name: "mmsg", arguments: ["--engine", "mmsg", "--gso", "off", "--gro", "off"]),
        EngineSetting(name: "uring", arguments: ["--engine", "uring", "--gso", "off", "--gro", "off"]),
        EngineSetting(name: "uring+gso", arguments: ["--engine", "uring", "--gso", "on", "--gro", "off"]),
    ]

    /// On video only: mmsg with GSO, without and with the relay's GRO (uring has it too: one pair shows its share), so the
    /// video row shows what GRO adds on the traffic it is for.
    public static let videoGRO: [EngineSetting] = [
        EngineSetting(name: "mmsg+gso", arguments: ["--engine", "mmsg", "--gso", "on", "--gro", "off"], profiles: [.video]),
        EngineSetting(name: "mmsg+gso+gro", arguments: ["--engine", "mmsg", "--gso", "on", "--gro", "on"], profiles: [.video]),
    ]

    /// The same engine with `count` workers, named `NAME w<count>` when more than one.
    public func with(workers count: Int) -> EngineSetting {
        var copy = EngineSetting(name: count == 1 ? name : "\(name) w\(count)", arguments: arguments, reference: reference,
                                 counterpart: counterpart, profiles: profiles)
        copy.workers = count
        return copy
    }

    /// The value after `flag` in the arguments.
    func value(of flag: String) -> String? {
        arguments.firstIndex(of: flag).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
    }

    /// The C reference forwarder with `relay`'s backend: `c-NAME`, run with `--backend` written
    /// from the relay's own `--engine`, `--gso` and `--gro`, so the two cannot differ in GSO or
    /// GRO by a slip of the hand; at the same loads.
    public static func reference(for relay: EngineSetting) -> EngineSetting {
        let backend = (relay.value(of: "--engine") ?? "perpacket") + (relay.value(of: "--gso") == "on" ? "+gso" : "")
            + (relay.value(of: "--gro") == "on" ? "+gro" : "")
        return EngineSetting(name: "c-\(relay.name)", arguments: ["--backend", backend], reference: true, counterpart: relay.name,
                             profiles: relay.profiles)
    }

    /// The C counterpart of every relay setting: c-perpacket, c-mmsg, c-uring, c-uring+gso, and
    /// at video loads c-mmsg+gso and c-mmsg+gso+gro.
    public static let references: [EngineSetting] = (all + videoGRO).map(reference(for:))

    /// The C per-packet forwarder, run by `compare --reference PATH` (the only one unless
    /// `--references all` or `--engines` asks for more).
    public static let cPerPacket = reference(for: all[0])

    /// The name the C forwarder's figures go under: `c-` and its backend without +gso or +gro,
    /// as the relay reports `uring` for uring with GSO.
    var reportedReferenceName: String {
        "c-" + (value(of: "--backend") ?? "perpacket").prefix { $0 != "+" }
    }
}

/// Which C reference forwarders `compare --reference PATH` runs (`--references`).
public enum ReferenceSet: String, CaseIterable, Sendable {
    /// c-perpacket alone, the baseline of what batching saves (`make demo`).
    case perpacket
    /// The counterpart of every relay engine that runs, each with the relay's backend.
    case all
}

/// An offered load: a profile, stream count and (constant profile) rate and size.
public struct LoadPoint: Sendable, Equatable {
    public let label: String
    public let profile: TrafficProfile
    public let streams: Int
    public let rate: Double
    public let size: Int
    /// Video: each frame leaves the generator as one GSO send (`--sender-gso`).
    public var senderGSO = false

    /// `rate` datagrams/s of 200 B over `streams` streams (sessions), labelled `NNNk`, or
    /// `NNNkxS` for other than 20 streams.
    public static func constant(_ rate: Double, streams: Int = 20) -> LoadPoint {
        LoadPoint(label: "\(Int(rate / 1000))k" + (streams == 20 ? "" : "x\(streams)"), profile: .constant, streams: streams, rate: rate, size: 200)
    }

    /// `streams` video streams at the default 2 Mbit/s, each frame sent as one GSO send.
    public static func video(_ streams: Int) -> LoadPoint {
        LoadPoint(label: "video\(streams)", profile: .video, streams: streams, rate: 0, size: 0, senderGSO: true)
    }

    /// 10k (the latency check), 50k, 100k, 200k datagrams/s of 200 B over 20 streams, 100k
    /// over 2 (few flows at a high rate: many datagrams per socket at each wake-up, where
    /// recvmmsg and sendmmsg batch), then 2,000 voice streams and 200 video streams of 2 Mbit/s
    /// (frames sent with GSO).
    public static let standard: [LoadPoint] = [constant(10_000), constant(50_000), constant(100_000), constant(200_000),
                                               constant(100_000, streams: 2),
                                               LoadPoint(label: "voice2000", profile: .voice, streams: 2000, rate: 0, size: 0), video(200)]

    /// A load by its label: a standard one, `NNNk` (constant, NNN thousand datagrams/s of 200 B
    /// over 20 streams, NNN 1...2000), `NNNkxS` (the same over S streams, 1...10000), `voiceN` or
    /// `videoN` (N streams, 1...10000). Nil for anything else.
    public static func named(_ label: String) -> LoadPoint? {
        if let known = standard.first(where: { $0.label == label }) { return known }
        if label.hasPrefix("voice"), let n = count(label.dropFirst(5), 1...10000) {
            return LoadPoint(label: label, profile: .voice, streams: n, rate: 0, size: 0)
        }
        if label.hasPrefix("video"), let n = count(label.dropFirst(5), 1...10000) { return video(n) }
        let parts = label.split(separator: "x", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts[0].hasSuffix("k"), let thousands = count(parts[0].dropLast(), 1...2000) else { return nil }
        guard let streams = parts.count == 1 ? 20 : count(parts[1], 1...10000) else { return nil }
        return constant(Double(thousands * 1000), streams: streams)
    }

    /// Decimal digits only (no sign, no spaces) within `range`.
    private static func count(_ text: Substring, _ range: ClosedRange<Int>) -> Int? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(text), range.contains(n) else { return nil }
        return n
    }

    public var offeredRate: Double { profile == .constant ? rate : TrafficShape(profile: profile, streams: streams, rate: 0, size: 0, bitrate: TrafficProfile.defaultVideoBitrate, tos: nil).datagramsPerSecond }
}

/// One run of the comparison.
public struct PlannedRun: Sendable, Equatable {
    public let repeatIndex: Int
    public let load: LoadPoint
    public let engine: EngineSetting
}

/// The order of runs: repeat-major, then load, then engine, so slow drift of the machine
/// (thermal, background work) falls on every engine alike instead of on whichever ran last.
/// Within a repeat the engine order rotates, so no engine always runs first after a load change.
public func comparisonPlan(repeats: Int, loads: [LoadPoint], engines: [EngineSetting]) -> [PlannedRun] {
    (0..<repeats).flatMap { comparisonRound($0, loads: loads, engines: engines) }
}

/// One repeat round of `comparisonPlan`: every load in `loads` on every engine that runs at it
/// and that `wanted` keeps. `compare` runs further rounds with only the loads whose checks are
/// not settled yet, and at them only the two sides of those checks.
public func comparisonRound(_ r: Int, loads: [LoadPoint], engines: [EngineSetting],
                            wanted: (LoadPoint, EngineSetting) -> Bool = { _, _ in true }) -> [PlannedRun] {
    var plan: [PlannedRun] = []
    for (l, load) in loads.enumerated() {
        let engines = engines.filter { $0.runs(at: load) && wanted(load, $0) }
        for e in 0..<engines.count {
            let engine = engines[(e + r + l) % engines.count]
            plan.append(PlannedRun(repeatIndex: r, load: load, engine: engine))
        }
    }
    return plan
}
