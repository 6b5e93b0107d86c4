/// What coturn's `turnutils_uclient` reports at its end. Its exit status is 0 even when nothing
/// was relayed (../shared/notes/turn-interop.md), so the verdict is read from its last lines:
///
///     1: : start_mclient: tot_send_msgs=40, tot_recv_msgs=40
///     1: : start_mclient: tot_send_bytes ~ 6400, tot_recv_bytes ~ 6400
///     1: : Total lost packets 0 (0.000000%), total send dropped 0 (0.000000%)
///
/// Progress lines with the same words appear earlier (with zeros); the last one counts.
struct TURNClientVerdict: Equatable {
    var sentBytes: Int
    var receivedBytes: Int
    var sentMessages: Int?
    var receivedMessages: Int?
    var lostPackets: Int
    /// Lines containing "ERROR" (failed allocations, refused permissions, ...).
    var errors: [String]

    /// Every byte sent came back, nothing was lost, nothing failed.
    var everyByteEchoed: Bool {
        sentBytes > 0 && receivedBytes == sentBytes && lostPackets == 0 && errors.isEmpty
            && (sentMessages == nil || sentMessages == receivedMessages)
    }

    /// nil when the output lacks the byte totals or the loss line (uclient stopped early).
    init?(parsing output: String) {
        var bytes: (Int, Int)?
        var messages: (Int, Int)?
        var lost: Int?
        var errors: [String] = []
        for line in output.split(whereSeparator: \.isNewline) {
            if line.contains("ERROR") { errors.append(String(line)) }
            if let sent = Self.number(after: "tot_send_bytes ~ ", in: line),
               let received = Self.number(after: "tot_recv_bytes ~ ", in: line) {
                bytes = (sent, received)
            }
            if let sent = Self.number(after: "tot_send_msgs=", in: line),
               let received = Self.number(after: "tot_recv_msgs=", in: line), !line.contains("msz=") {
                messages = (sent, received)
            }
            if let count = Self.number(after: "Total lost packets ", in: line) { lost = count }
        }
        guard let bytes, let lost else { return nil }
        sentBytes = bytes.0
        receivedBytes = bytes.1
        sentMessages = messages?.0
        receivedMessages = messages?.1
        lostPackets = lost
        self.errors = errors
    }

    private static func number(after marker: String, in line: Substring) -> Int? {
        guard let range = line.range(of: marker) else { return nil }
        let digits = line[range.upperBound...].prefix { $0.isASCII && $0.isNumber }
        return Int(digits)
    }
}
