/// What coturn's `turnutils_uclient` reports at its end. Its exit status is 0 even when nothing
/// was relayed (../shared/notes/turn-interop.md), so the verdict is read from its last lines:
///
///     4: : start_mclient: tot_send_msgs=40, tot_recv_msgs=40
///     4: : start_mclient: tot_send_bytes ~ 6400, tot_recv_bytes ~ 6400
///     4: : Total lost packets 0 (0.000000%), total send dropped 0 (0.000000%)
///
/// Progress lines with the same words come earlier (`msz=...`, with smaller figures), and an
/// output may hold more than one run: only the last totals count, and only when the loss line
/// follows them (a run cut short prints progress but no loss line).
///
/// Every test that runs uclient judges it here, through `problems(in:arguments:)`.
public struct TURNClientVerdict: Equatable, Sendable {
    public var sentBytes: Int
    public var receivedBytes: Int
    public var sentMessages: Int?
    public var receivedMessages: Int?
    public var lostPackets: Int
    /// Lines that say "error" in any case: uclient writes `ERROR:` for a refused Allocate or
    /// permission, and a lower-case one is no better news.
    public var errors: [String]
    /// Lines of a 300 Try Alternate (`error 300 (Try Alternate)`), not counted as errors: uclient
    /// logs so the redirect of its probe Allocate, then allocates at the ALTERNATE-SERVER. A 300
    /// it does not follow (to a later Allocate) ends it before its summary, so no run with an
    /// unfollowed redirect gets a verdict.
    public var redirects: [String]
    /// uclient's TLS connections refused for an old protocol version and retried
    /// (`isTLSVersionProbe`), not counted as errors.
    public var tlsProbes: [String]
    /// 437 answers to an Allocate uclient sent again, as a new transaction, after its first
    /// went unanswered for a while (a loaded machine): the server must refuse a second
    /// allocation on the 5-tuple (RFC 8656 section 7.2), and uclient goes on with the first.
    /// Not errors by themselves: the totals still say whether every byte came through.
    public var retriedAllocates: [String]

    /// nil when the output lacks the byte totals or the loss line after them.
    public init?(parsing output: String) {
        var bytes: (sent: Int, received: Int, line: Int)?
        var messages: (sent: Int, received: Int)?
        var lost: (count: Int, line: Int)?
        var errors: [String] = []
        var redirects: [String] = []
        var tlsProbes: [String] = []
        var retriedAllocates: [String] = []
        for (index, line) in output.split(whereSeparator: \.isNewline).enumerated() {
            if line.contains("error 300 (Try Alternate)") {
                redirects.append(String(line))
            } else if Self.isTLSVersionProbe(line) {
                tlsProbes.append(String(line))
            } else if line.contains("error 437 (Allocation Mismatch)") {
                retriedAllocates.append(String(line))
            } else if line.lowercased().contains("error") {
                errors.append(String(line))
            }
            if let sent = Self.number(after: "tot_send_bytes ~ ", in: line),
               let received = Self.number(after: "tot_recv_bytes ~ ", in: line) {
                bytes = (sent, received, index)
            }
            if let sent = Self.number(after: "tot_send_msgs=", in: line),
               let received = Self.number(after: "tot_recv_msgs=", in: line), !line.contains("msz=") {
                messages = (sent, received)
            }
            if let count = Self.number(after: "Total lost packets ", in: line) { lost = (count, index) }
        }
        guard let bytes, let lost, lost.line > bytes.line else { return nil }
        sentBytes = bytes.sent
        receivedBytes = bytes.received
        sentMessages = messages?.sent
        receivedMessages = messages?.received
        lostPackets = lost.count
        self.errors = errors
        self.redirects = redirects
        self.tlsProbes = tlsProbes
        self.retriedAllocates = retriedAllocates
    }

    /// uclient over TLS (`-S`) opens each connection with a TLS method picked from several,
    /// TLS 1.0 and 1.1 among them, and on a refusal connects again with another; a server with
    /// OpenSSL's defaults refuses those two, and uclient logs the refusal and its retry as
    /// errors. Those two lines alone are no failure: the totals still say whether every byte
    /// came through.
    static func isTLSVersionProbe(_ line: Substring) -> Bool {
        line.contains("alert protocol version") || line.contains("tls_connect: cannot connect")
    }

    /// Why this run did not relay `workload` whole; empty when it did: every byte asked for
    /// was sent, every one came back, nothing was lost, nothing failed.
    public func problems(for workload: TURNClientWorkload) -> [String] {
        var problems: [String] = []
        if sentBytes != workload.expectedSentBytes {
            problems.append("sent \(sentBytes) bytes, not \(workload.expectedSentBytes) "
                + "(\(workload.sessions) sessions x \(workload.messages) messages x \(workload.length) bytes)")
        }
        if receivedBytes != sentBytes { problems.append("received \(receivedBytes) of \(sentBytes) bytes") }
        if let sentMessages, sentMessages != receivedMessages {
            problems.append("received \(receivedMessages.map(String.init) ?? "?") of \(sentMessages) messages")
        }
        if lostPackets != 0 { problems.append("\(lostPackets) packets lost") }
        problems += errors.map { "error line: \($0)" }
        return problems
    }

    /// The one verdict on a run: its problems for the workload its `arguments` asked for (the
    /// whole argument list given to uclient); empty when it passed.
    public static func problems(in output: String, arguments: [String]) -> [String] {
        guard let workload = TURNClientWorkload(arguments: arguments) else {
            return ["the arguments do not say -m, -n and -l, so the bytes to expect are unknown: \(arguments)"]
        }
        guard let verdict = TURNClientVerdict(parsing: output) else {
            let errors = output.split(whereSeparator: \.isNewline).filter { $0.lowercased().contains("error") }
            return ["no totals followed by a loss line: uclient stopped before its summary"] + errors.map { "error line: \($0)" }
        }
        return verdict.problems(for: workload)
    }

    private static func number(after marker: String, in line: Substring) -> Int? {
        guard let range = line.firstRange(of: marker) else { return nil }
        let digits = line[range.upperBound...].prefix { $0.isASCII && $0.isNumber }
        return Int(digits)
    }
}
