/// The traffic shapes the generator can offer. The numbers here are the documented ones
/// (see `LoadOptions.helpText`); tests hold the two in step.
///
/// Every profile is described per stream as ticks per second and datagrams per tick, so one
/// pacer can drive all streams: tick `t` belongs to stream `t % streams`.
public enum TrafficProfile: String, Sendable, CaseIterable {
    /// `--rate` total datagrams/s of `--size` bytes, TOS from `--tos` (default 0).
    case constant
    /// 50 datagrams/s per stream of 160 B (20 ms G.711 frames), DSCP EF (46).
    case voice
    /// 60 ticks/s per stream, one datagram of 80...400 B (deterministic pseudo-random), DSCP AF21 (18).
    case game
    /// 30 frames/s per stream, each frame a burst of 1200 B datagrams carrying `--bitrate`
    /// (default 2 Mbit/s), DSCP AF41 (34).
    case video

    public static let voiceRate = 50.0
    public static let voiceSize = 160
    public static let gameRate = 60.0
    public static let gameSizes = 80...400
    public static let videoFrameRate = 30.0
    public static let videoDatagramSize = 1200
    public static let defaultVideoBitrate = 2_000_000

    /// The DSCP the profile marks with; `constant` marks DF (0).
    public var dscp: UInt8 {
        switch self {
        case .constant: 0
        case .voice: 46
        case .game: 18
        case .video: 34
        }
    }

    /// ECN codepoint ECT(0). Profiles send ECN-capable datagrams so a run measures whether the
    /// relay keeps the codepoint.
    public static let ect0: UInt8 = 2

    /// The TOS byte, `(dscp << 2) | ecn`, used unless `--tos` overrides it.
    public var defaultTOS: UInt8 { self == .constant ? 0 : (dscp << 2) | Self.ect0 }
}

/// A profile made concrete for one run: how many ticks per second over all streams, how many
/// datagrams per tick, and each datagram's size.
public struct TrafficShape: Sendable, Equatable {
    public let profile: TrafficProfile
    public let streams: Int
    /// Ticks per second over all streams (the pacer's rate).
    public let ticksPerSecond: Double
    /// Datagrams sent back to back per tick (video frames are bursts).
    public let datagramsPerTick: Int
    /// Size of every datagram, except for `game`, whose sizes come from `size(stream:sequence:)`.
    public let fixedSize: Int
    public let tos: UInt8

    /// - Parameters:
    ///   - rate: total datagrams/s; only `constant` uses it.
    ///   - size: bytes per datagram; only `constant` uses it.
    ///   - bitrate: bits/s per video stream.
    ///   - tos: overrides the profile's TOS byte when given.
    public init(profile: TrafficProfile, streams: Int, rate: Double, size: Int, bitrate: Int, tos: UInt8?) {
        self.profile = profile
        self.streams = streams
        self.tos = tos ?? profile.defaultTOS
        switch profile {
        case .constant:
            ticksPerSecond = rate
            datagramsPerTick = 1
            fixedSize = size
        case .voice:
            ticksPerSecond = TrafficProfile.voiceRate * Double(streams)
            datagramsPerTick = 1
            fixedSize = TrafficProfile.voiceSize
        case .game:
            ticksPerSecond = TrafficProfile.gameRate * Double(streams)
            datagramsPerTick = 1
            fixedSize = TrafficProfile.gameSizes.upperBound
        case .video:
            ticksPerSecond = TrafficProfile.videoFrameRate * Double(streams)
            let bytesPerFrame = Double(bitrate) / 8 / TrafficProfile.videoFrameRate
            datagramsPerTick = max(1, Int((bytesPerFrame / Double(TrafficProfile.videoDatagramSize)).rounded(.up)))
            fixedSize = TrafficProfile.videoDatagramSize
        }
    }

    /// Total offered datagrams per second.
    public var datagramsPerSecond: Double { ticksPerSecond * Double(datagramsPerTick) }

    /// The largest datagram this shape sends (buffers are sized from it).
    public var maxSize: Int { fixedSize }

    /// The size of datagram `sequence` of `stream`. For `game` a pure function of both, so runs
    /// are repeatable and no random state is kept per datagram.
    @inline(__always)
    public func size(stream: UInt32, sequence: UInt64) -> Int {
        guard profile == .game else { return fixedSize }
        // SplitMix64 finaliser: cheap, well mixed, no state.
        var z = ((UInt64(stream) << 40) ^ sequence) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        let span = UInt64(TrafficProfile.gameSizes.count)
        return TrafficProfile.gameSizes.lowerBound + Int(z % span)
    }
}
