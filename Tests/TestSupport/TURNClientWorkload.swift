/// What one `turnutils_uclient` run was asked to send, read from its own arguments, so that
/// the verdict checks the totals against what the test asked for rather than against
/// whatever the client happened to report.
///
/// uclient (coturn 4.6.1, `start_mclient`) rounds `-m` up before it starts: to an even number
/// when its clients are RTP/RTCP pairs (the default; `-c` turns pairs off), and client to
/// client (`-y`) to a multiple of four with pairs, or to an even number without. Every session
/// of a pair sends `-n` messages of `-l` bytes, so the bytes it must report sent are
/// sessions x messages x length.
public struct TURNClientWorkload: Equatable, Sendable {
    /// `-m`, as asked.
    public var clients: Int
    /// `-n`: messages per session.
    public var messages: Int
    /// `-l`: bytes per message.
    public var length: Int
    /// `-y`
    public var clientToClient: Bool
    /// No `-c`.
    public var pairs: Bool

    public init(clients: Int, messages: Int, length: Int, clientToClient: Bool = false, pairs: Bool = true) {
        self.clients = clients
        self.messages = messages
        self.length = length
        self.clientToClient = clientToClient
        self.pairs = pairs
    }

    /// From uclient's argument list; nil unless `-m`, `-n` and `-l` are all given (its
    /// defaults are not this harness's business). The last of a repeated option counts, as
    /// with getopt.
    public init?(arguments: [String]) {
        var values: [String: Int] = [:]
        var clientToClient = false
        var pairs = true
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "-m", "-n", "-l":
                guard index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return nil }
                values[arguments[index]] = value
                index += 1
            case "-y": clientToClient = true
            case "-c": pairs = false
            default: break
            }
            index += 1
        }
        guard let clients = values["-m"], let messages = values["-n"], let length = values["-l"] else { return nil }
        self.init(clients: clients, messages: messages, length: length, clientToClient: clientToClient, pairs: pairs)
    }

    /// The sessions uclient runs: `clients` rounded up as it rounds them.
    public var sessions: Int {
        let asked = max(clients, 1)
        let multiple = clientToClient && pairs ? 4 : (clientToClient || pairs ? 2 : 1)
        return (asked + multiple - 1) / multiple * multiple
    }

    public var expectedSentBytes: Int { sessions * messages * length }
}
