import Glibc
// DSCP and ECN policies come from RelayCore and service classes from DatagramEngine: one
// definition each, shared by the options and the relay.
import NetAddress
import RelayCore
import DatagramEngine

/// Which datagram backend the workers use. `auto` picks io_uring where the kernel (and any
/// seccomp profile) allows it, else mmsg; the choice and its reason are logged and in /v1/stats.
enum Engine: String, CaseIterable, Sendable {
    case auto, perpacket, mmsg, uring
}

/// Lowest severity of log lines written to stderr.
enum LogLevel: String, CaseIterable, Sendable {
    case debug, info, warning, error
}

/// A reason a single option value was refused; the parser adds which option or key it was.
struct ValueProblem: Error, Equatable {
    /// What is accepted, phrased for a person: "expected one of on, off".
    let expected: String
}

extension ValueProblem {
    /// A `HOST:PORT` refused by NetAddress's parser, as an option's problem.
    init(_ problem: HostPortError) { self.init(expected: problem.expected) }
}

extension HostPort {
    /// Parses an option's or config key's value (NetAddress's one parser), refusing as options do.
    init(option text: String, allowsPortZero: Bool = false) throws(ValueProblem) {
        do throws(HostPortError) {
            try self.init(parsing: text, allowsPortZero: allowsPortZero)
        } catch {
            throw ValueProblem(error)
        }
    }
}

/// One `--forward LISTEN=UPSTREAM` rule: datagrams to `listen` go to `upstream`, each client
/// source with its own upstream socket from the port range.
struct ForwardSpec: Equatable, Sendable, CustomStringConvertible {
    var listen: HostPort
    var upstream: HostPort

    var description: String { "\(listen)=\(upstream)" }

    init(parsing text: String) throws(ValueProblem) {
        let expected = ValueProblem(
            expected: "expected LISTEN=UPSTREAM, each HOST:PORT or [IPV6]:PORT with an IP literal and a port in 1...65535"
        )
        let sides = text.split(separator: "=", omittingEmptySubsequences: false)
        guard sides.count == 2 else { throw expected }
        do {
            listen = try HostPort(parsing: String(sides[0]))
            upstream = try HostPort(parsing: String(sides[1]))
        } catch {
            throw expected
        }
    }

    init(listen: HostPort, upstream: HostPort) {
        self.listen = listen
        self.upstream = upstream
    }
}

/// The UDP ports sessions and forward clients bind, `LOW-HIGH` inclusive.
struct PortRange: Equatable, Sendable, CustomStringConvertible {
    var low: UInt16
    var high: UInt16

    var count: Int { Int(high) - Int(low) + 1 }
    var description: String { "\(low)-\(high)" }

    init(low: UInt16, high: UInt16) {
        self.low = low
        self.high = high
    }

    init(parsing text: String) throws(ValueProblem) {
        let expected = ValueProblem(expected: "expected LOW-HIGH with 1 <= LOW <= HIGH <= 65535")
        let sides = text.split(separator: "-", omittingEmptySubsequences: false)
        guard sides.count == 2,
            let low = PortRange.port(sides[0]), let high = PortRange.port(sides[1]), low <= high
        else { throw expected }
        self.low = low
        self.high = high
    }

    private static func port(_ text: Substring) -> UInt16? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }),
            let value = Int(text), (1...65535).contains(value)
        else { return nil }
        return UInt16(value)
    }
}

/// `--fast-path`: where established flows are forwarded. `off` keeps every datagram in user
/// space; `tc` attaches a tc program to each interface; `xdp` attaches XDP, with tc for an
/// interface that refuses it (said in one line); `auto` takes XDP where the driver runs it
/// natively and tc elsewhere, silently.
enum FastPathMode: String, CaseIterable, Sendable {
    case off, auto, tc, xdp
}

/// A network interface's name as the kernel takes it (`if_nametoindex`): whether one by that
/// name exists is checked at start, where a missing one turns the fast path off with a reason.
enum InterfaceName {
    static let accepted = "an interface name: 1...15 characters, no space, \"/\" or \":\""

    static func check(_ text: String) throws(ValueProblem) -> String {
        // IFNAMSIZ is 16 with the terminating NUL; the kernel refuses "/", ":" and whitespace.
        let bytes = text.utf8
        guard (1...15).contains(bytes.count), text != ".", text != "..",
              bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: ":") })
        else { throw ValueProblem(expected: "expected \(accepted)") }
        return text
    }
}
