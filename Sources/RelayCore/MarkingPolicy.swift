import DatagramEngine
import NetAddress

/// What happens to a datagram's DSCP on the way through.
public enum DSCPPolicy: String, Sendable, CaseIterable {
    /// Copy the DSCP received (the default).
    case mirror
    /// Re-mark to the service class's DSCP.
    case `class`
    /// Send with DSCP 0.
    case zero
}

/// What happens to a datagram's ECN codepoint on the way through.
public enum ECNPolicy: String, Sendable, CaseIterable {
    /// The codepoint received is the codepoint sent: ECT(0) and ECT(1) stay distinct, CE passes
    /// through, Not-ECT is never upgraded (RFC 8656 section 14, RFC 9331).
    case preserve
    /// Send every datagram Not-ECT.
    case clear
}

/// The marking rule of one forward rule or session, applied per datagram.
public struct MarkingPolicy: Sendable, Equatable {
    public var dscp: DSCPPolicy
    public var ecn: ECNPolicy
    public var serviceClass: ServiceClass

    public init(dscp: DSCPPolicy = .mirror, ecn: ECNPolicy = .preserve, serviceClass: ServiceClass = .bestEffort) {
        self.dscp = dscp
        self.ecn = ecn
        self.serviceClass = serviceClass
    }

    @inline(__always)
    public func apply(_ received: TrafficClass) -> TrafficClass {
        let dscp: UInt8 = switch self.dscp {
        case .mirror: received.dscp
        case .class: serviceClass.dscp
        case .zero: 0
        }
        let ecn: ECN = ecn == .preserve ? received.ecn : .notECT
        return TrafficClass(dscp: dscp, ecn: ecn)
    }
}
