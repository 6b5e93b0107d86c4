import JSONSyntax

/// A JSON value written in a fixed key order, so results diff cleanly between runs.
/// Non-finite numbers are written as `null` (JSON has no NaN), e.g. a per-packet figure of a
/// run in which no packet came in.
public indirect enum JSONValue: Sendable, Equatable {
    case number(Double)
    case integer(Int64)
    case string(String)
    case bool(Bool)
    case object([(String, JSONValue)])
    case null

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.rendered == b.rendered }

    /// Compact JSON text on one line (values written by JSONWriting, the package's one way).
    public var rendered: String {
        switch self {
        case .number(let d): d.isFinite ? JSONWriting.number(d) : "null"
        case .integer(let i): String(i)
        case .string(let s): JSONWriting.quoted(s)
        case .bool(let b): b ? "true" : "false"
        case .null: "null"
        case .object(let members):
            "{" + members.map { JSONWriting.quoted($0.0) + ":" + $0.1.rendered }.joined(separator: ",") + "}"
        }
    }
}
