import NetAddress
import STUN

/// A request refused with an error code (and, for 420, the attributes not understood; for
/// 300, where to go instead).
struct TurnRefusal: Error {
    var code: ErrorCode
    var unknown: [AttributeType] = []
    var redirect: TurnRedirect?
    /// The reason phrase when the code's own says too little: a 400 names what was wrong, so a
    /// client's log (uclient prints it) tells its developer which rule the request broke.
    var reason: String?
    /// Why, where the operator can cure it (an option, the host): logged, rate-limited.
    var cause: RefusalCause?

    static func badRequest(_ reason: String) -> TurnRefusal { TurnRefusal(code: .badRequest, reason: reason) }
}

extension TurnAuthenticator {
    /// Whether the 401 to the smallest Allocate a client may send (REQUESTED-TRANSPORT alone)
    /// fits under `TurnSettings.unauthenticatedSlack`. The realm is the one part of a 401 the
    /// operator sizes: past about 52 bytes such a client gets no answer at all (counted as an
    /// `amplification` drop), so the server warns at start.
    public var challengeFitsBareAllocate: Bool {
        var bare = MessageBuilder(MessageType(.allocate, .request), transactionID: .random())
        bare.append(.requestedTransport, [17, 0, 0, 0])
        var answer = MessageBuilder(MessageType(.allocate, .errorResponse), transactionID: bare.transactionID)
        answer.append(error: .unauthenticated)
        appendChallenge(to: &answer, for: Endpoint(ipv4: 0, port: 0), second: 0)
        return answer.bytes.count <= bare.bytes.count + TurnSettings.unauthenticatedSlack
    }
}
