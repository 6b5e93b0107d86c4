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

    /// Compact JSON text on one line.
    public var rendered: String {
        switch self {
        case .number(let d):
            guard d.isFinite else { return "null" }
            if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
            return String(d)
        case .integer(let i): return String(i)
        case .string(let s): return Self.quote(s)
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        case .object(let members):
            return "{" + members.map { Self.quote($0.0) + ":" + $0.1.rendered }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
