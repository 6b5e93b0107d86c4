/// A JSON value as the package reads and writes it: what `JSONValue(parsing:)` returns for the
/// config file, the API's bodies, /v1/stats and the tests, and what the load generator renders
/// its results from.
///
/// Contract: an object keeps its members in order (the writer's order when built, the text's
/// when parsed), and a parsed object never holds one key twice. A number spelled without a
/// fraction or an exponent that fits in 64 bits is `integer`; every other number is `number`,
/// so a reader can refuse `2.5` or `1e3` where it wants an integer. Two values are equal when
/// they render to the same text. Non-finite numbers (which no parse yields) render as `null`:
/// JSON has no NaN.
public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.rendered == b.rendered }

    /// The member named `key` of an object; nil when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// An object's members in order, or nil.
    public var members: [(String, JSONValue)]? {
        if case .object(let members) = self { members } else { nil }
    }

    /// An array's elements, or nil.
    public var elements: [JSONValue]? {
        if case .array(let elements) = self { elements } else { nil }
    }

    public var string: String? {
        if case .string(let text) = self { text } else { nil }
    }

    public var bool: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// A number spelled as an integer (never a boolean, a fraction or an exponent).
    public var integer: Int64? {
        if case .integer(let value) = self { value } else { nil }
    }

    /// Any number, as a Double.
    public var double: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    /// What kind of value this is, for an error that says what was found instead.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Compact JSON text on one line (values written by JSONWriting, the package's one way).
    public var rendered: String {
        var out: [UInt8] = []
        render(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private func render(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .integer(let value): out.append(contentsOf: String(value).utf8)
        case .number(let value): out.append(contentsOf: (value.isFinite ? JSONWriting.number(value) : "null").utf8)
        case .string(let text): JSONWriting.appendString(text, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.render(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriting.appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.render(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}
