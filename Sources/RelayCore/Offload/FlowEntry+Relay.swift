import FastPath
import NetAddress

extension FlowEntry {
    /// The entry for a flow the relay has decided: from `source` to `destination` with
    /// `policy`'s marking, the way the kernel's routes find, forwarding until `expiresAt` (nil:
    /// no fixed end) and while a datagram comes at least every `idleTimeout` nanoseconds;
    /// `credited`, `packetCredited`: only as far as the byte and packet credit its table grants
    /// (a flow with a rate limit); `dontFragment`: DF as the relay's socket for the flow sets it.
    static func relay(from source: Endpoint, to destination: Endpoint, kind: Kind = .plain, policy: MarkingPolicy,
                      expiresAt: UInt64? = nil, idleTimeout: UInt64? = nil, credited: Bool = false,
                      packetCredited: Bool = false, dontFragment: Bool = true) -> FlowEntry {
        let dscp: DSCP = switch policy.dscp {
        case .mirror: .mirror
        case .class: .value(policy.serviceClass.dscp)
        case .zero: .zero
        }
        return FlowEntry(source: source, destination: destination, kind: kind, dscp: dscp, ecn: policy.ecn == .preserve ? .copy : .clear,
                         egressInterface: nil, expiresAt: expiresAt, idleTimeout: idleTimeout, credited: credited,
                         packetCredited: packetCredited, dontFragment: dontFragment)
    }
}
