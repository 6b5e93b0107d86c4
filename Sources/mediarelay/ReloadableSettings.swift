import RelayCore
import Synchronization

/// What the control API reads on every request that a config reload (SIGHUP) may change: the
/// bearer token, the defaults of new sessions and the ready threshold. TURN users and secrets belong here too when
/// they come, for the same reason: a reload must reach the next request without a restart.
///
/// Contract: safe from any thread; a reader sees either the old values or the new ones, never a
/// mix of the two.
final class ReloadableSettings: Sendable {
    struct Values: Sendable, Equatable {
        /// nil: the API is open (only allowed on a loopback listener).
        var controlToken: String?
        /// Marking of new sessions that do not ask for their own.
        var sessionPolicy: MarkingPolicy
        /// Whether new sessions that do not say mark CE at their limits (--ecn-marking).
        var sessionECNMarking: Bool
        var sessionIdleTimeoutSeconds: Int
        /// /readyz says 503 once any capacity reaches this fraction.
        var readyThreshold: Double

        init(_ options: ServerOptions) {
            controlToken = options.controlToken
            sessionPolicy = MarkingPolicy(dscp: options.dscp, ecn: options.ecn, serviceClass: options.serviceClass)
            sessionECNMarking = options.ecnMarking
            sessionIdleTimeoutSeconds = options.idleTimeoutSeconds
            readyThreshold = options.readyThreshold
        }
    }

    private let current: Mutex<Values>

    init(_ values: Values) {
        current = Mutex(values)
    }

    var values: Values { current.withLock { $0 } }

    func replace(with values: Values) {
        current.withLock { $0 = values }
    }
}
