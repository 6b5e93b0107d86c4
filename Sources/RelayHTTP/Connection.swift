/// One client connection's buffers, phase and timers.
///
/// Contract: touched only by the serve loop's thread, so it needs no lock; the loop owns the
/// descriptor and closes it. Times are monotonic nanoseconds (`MonotonicClock`).
final class Connection {
    enum Phase {
        /// Reading requests and answering them in order.
        case serving
        /// A final response is queued; once it is written the connection closes.
        case closingAfterWrite
        /// Our side is shut down; we read and discard until the client closes or time runs out,
        /// so that unread request bytes do not make the kernel reset the connection and destroy
        /// the response on its way.
        case lingering
    }

    let fd: Int32
    /// Accepted beyond the connection cap only to be told 503.
    let rejected: Bool
    var phase: Phase = .serving
    var inbound: [UInt8] = []
    /// Bytes `inbound` must hold before the request at its front is whole (its head already
    /// parsed); 0 when unknown.
    var bytesNeeded = 0
    var outbound: [UInt8] = []
    var outboundSent = 0
    /// When the request being received began (accept time for a fresh connection); nil while
    /// idle between requests.
    var requestStartedAt: UInt64?
    var idleSince: UInt64
    var lastWriteProgress: UInt64
    var lingerUntil: UInt64 = 0
    var discardedWhileLingering = 0
    /// The client has sent end of file: there is no one to linger for.
    var peerFinishedSending = false
    var isClosed = false

    init(fd: Int32, rejected: Bool, now: UInt64) {
        self.fd = fd
        self.rejected = rejected
        self.requestStartedAt = now
        self.idleSince = now
        self.lastWriteProgress = now
    }

    var pendingOutput: Int { outbound.count - outboundSent }
    var hasPendingOutput: Bool { pendingOutput > 0 }
}
