import NetAddress
import STUN

/// The notices of one worker's TURN requests (or its connections), each through its rate limit: failed
/// authentications per source address (`SourceNoticeBudget`), refusals per kind of cause
/// (`RefusalNoticeGate`). What passes goes to `TurnSettings.notices`.
///
/// Contract: called on the worker's thread, on the request path only; the limit is checked
/// before anything is built, so a suppressed notice allocates nothing.
struct TurnNotices {
    private let sink: TurnNoticeSink
    private var sources = SourceNoticeBudget()
    private var refusals = RefusalNoticeGate()

    init(sink: @escaping TurnNoticeSink) {
        self.sink = sink
    }

    /// A signed request from `client` that failed with `reason`. The first request of a client
    /// (no MESSAGE-INTEGRITY, answered with the challenge) is no failure and is not reported.
    mutating func authenticationFailed(_ reason: AuthFailure, _ message: StunMessage, client: Endpoint, transport: TurnTransport,
                                       now: UInt64) {
        guard reason != .challenged, let suppressed = sources.take(client, now: now) else { return }
        sink(.authenticationFailed(AuthenticationFailureNotice(
            client: client, transport: transport, username: try? message.text(.username), realm: try? message.text(.realm),
            reason: reason, suppressed: suppressed)))
    }

    /// A request from `client` refused with `code` for `cause` (nil: a connection closed on accept).
    mutating func refused(_ cause: RefusalCause, code: ErrorCode?, client: Endpoint, now: UInt64) {
        guard let suppressed = refusals.take(cause, now: now) else { return }
        sink(.refused(RefusalNotice(cause: cause, code: code, client: client, suppressed: suppressed)))
    }
}
