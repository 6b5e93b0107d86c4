import Glibc
import JSONSyntax

/// How log lines are written (`--log-format`): `text` for people, `json` (one object per line)
/// for journald, Loki and Elasticsearch.
enum LogFormat: String, CaseIterable, Sendable {
    case text, json
}

/// A value a log line carries beside its message.
enum LogValue: Equatable {
    case text(String)
    case integer(UInt64)
    /// Counts in a fixed order (ECN codepoints by value): `1,2,3,4` in text, `[1,2,3,4]` in JSON.
    case integers([UInt64])
    /// Counts by name (drops by reason): `a:1,b:2` in text, `{"a":1,"b":2}` in JSON.
    case counts([LogCount])
}

struct LogCount: Equatable {
    var name: String
    var count: UInt64
}

/// One named value of a log line; a line keeps its fields in the order given.
struct LogField: Equatable {
    var key: String
    var value: LogValue

    init(_ key: String, _ value: LogValue) {
        self.key = key
        self.value = value
    }
}

/// Renders one log line, newline included, ready for one write(2).
///
/// Contract: `text` is `mediarelay[LEVEL] message` followed by ` key=value` for each field in
/// order; a text value that is empty or holds a space, `"`, `=`, `\` or a control character is
/// written as a JSON string (quoted and escaped), so a line never breaks and a value never
/// forges another key. `json` is one object: `time` (RFC 3339, UTC, milliseconds), `level`,
/// `msg`, then the fields in order, every string escaped by `JSONWriting.appendString`. Keys are
/// the caller's constants, written as they are.
enum LogLine {
    static func render(_ format: LogFormat, level: String, message: String, fields: [LogField] = [],
                       timeNanoseconds: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128 + fields.count * 24)
        switch format {
        case .text:
            out.append(contentsOf: "mediarelay[\(level)] ".utf8)
            out.append(contentsOf: message.utf8)
            for field in fields {
                out.append(UInt8(ascii: " "))
                out.append(contentsOf: field.key.utf8)
                out.append(UInt8(ascii: "="))
                text(field.value, into: &out)
            }
        case .json:
            out.append(contentsOf: #"{"time":"#.utf8)
            JSONWriting.appendString(rfc3339(timeNanoseconds), to: &out)
            out.append(contentsOf: #","level":"#.utf8)
            JSONWriting.appendString(level, to: &out)
            out.append(contentsOf: #","msg":"#.utf8)
            JSONWriting.appendString(message, to: &out)
            for field in fields {
                out.append(UInt8(ascii: ","))
                JSONWriting.appendString(field.key, to: &out)
                out.append(UInt8(ascii: ":"))
                json(field.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "\n"))
        return out
    }

    private static func text(_ value: LogValue, into out: inout [UInt8]) {
        switch value {
        case .text(let string):
            if needsQuotes(string) { JSONWriting.appendString(string, to: &out) } else { out.append(contentsOf: string.utf8) }
        case .integer(let number):
            out.append(contentsOf: String(number).utf8)
        case .integers(let numbers):
            out.append(contentsOf: numbers.map(String.init).joined(separator: ",").utf8)
        case .counts(let counts):
            let joined = counts.map { "\($0.name):\($0.count)" }.joined(separator: ",")
            text(.text(joined), into: &out)
        }
    }

    private static func json(_ value: LogValue, into out: inout [UInt8]) {
        switch value {
        case .text(let string):
            JSONWriting.appendString(string, to: &out)
        case .integer(let number):
            out.append(contentsOf: String(number).utf8)
        case .integers(let numbers):
            out.append(contentsOf: ("[" + numbers.map(String.init).joined(separator: ",") + "]").utf8)
        case .counts(let counts):
            out.append(UInt8(ascii: "{"))
            for (index, count) in counts.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriting.appendString(count.name, to: &out)
                out.append(contentsOf: ":\(count.count)".utf8)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func needsQuotes(_ string: String) -> Bool {
        string.isEmpty || string.utf8.contains { byte in
            byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "\\")
        }
    }

    /// `2026-11-28T06:34:30.123Z` for nanoseconds since the Unix epoch.
    static func rfc3339(_ nanoseconds: UInt64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let milliseconds = Int(nanoseconds / 1_000_000 % 1000)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let fraction = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }
}
