/// How a sending stream reacts to what its receiver reports (`--congestion-control`), in the
/// manner of the transports it stands for. Every reaction happens once per feedback window.
public enum CongestionControl: String, Sendable, CaseIterable {
    /// Sends at the offered rate whatever happens (the generator's usual way).
    case none
    /// RFC 3168 / Reno: halves its rate in a window that saw a CE mark or a loss, and adds a
    /// step otherwise.
    case classic
    /// DCTCP / TCP Prague (RFC 9331's scalable senders): reduces in proportion to the fraction
    /// marked, rate x (1 - alpha / 2) with alpha the fraction's moving average (gain 1/16);
    /// halves on a loss; adds a step otherwise.
    case scalable
}

/// What a receiver saw of one stream in one feedback window.
public struct FeedbackWindow: Sendable, Equatable {
    public var received: UInt64
    public var marked: UInt64
    public var lost: UInt64

    public init(received: UInt64, marked: UInt64, lost: UInt64) {
        self.received = received
        self.marked = marked
        self.lost = lost
    }
}

/// The sending rate of one stream under a `CongestionControl`: starts at the offered rate and
/// never exceeds it (the offered rate is what the application has to send), never falls below
/// 1% of it. Additive increase: 1% of the offered rate per window, so a stream that halved is
/// back at the offered rate in 50 windows (1 s at the default 20 ms).
public struct RateController: Sendable {
    public let control: CongestionControl
    public let maximum: Double
    public private(set) var rate: Double
    /// The scalable sender's moving average of the fraction marked.
    public private(set) var alpha = 0.0

    public static let gain = 1.0 / 16
    public static let step = 0.01

    public init(_ control: CongestionControl, offered: Double) {
        self.control = control
        maximum = offered
        rate = offered
    }

    /// Reacts to one window's feedback; returns the new rate.
    @discardableResult
    public mutating func update(_ window: FeedbackWindow) -> Double {
        switch control {
        case .none:
            return rate
        case .classic:
            if window.marked > 0 || window.lost > 0 { rate /= 2 } else { rate += maximum * Self.step }
        case .scalable:
            if window.received > 0 {
                alpha += Self.gain * (Double(window.marked) / Double(window.received) - alpha)
            }
            if window.lost > 0 {
                rate /= 2
            } else if window.marked > 0 {
                rate *= 1 - alpha / 2
            } else {
                rate += maximum * Self.step
            }
        }
        rate = min(maximum, max(maximum * Self.step, rate))
        return rate
    }
}
