extension JSONValue {
    /// The most nesting `init(parsing:)` takes unless told otherwise: far more than any text the
    /// package reads, far less than would strain a thread's stack.
    public static let defaultMaximumDepth = 64
    /// The most bytes `init(parsing:)` takes unless told otherwise.
    public static let defaultMaximumBytes = 8 << 20

    /// Reads `bytes` as one JSON value (RFC 8259), refusing what JSONSerialization would let
    /// through silently: a key given twice in one object.
    ///
    /// Contract: strict and total. Every byte is read, so trailing text after the value is an
    /// error; bytes inside strings must be UTF-8, escapes well formed (surrogates in pairs),
    /// control characters escaped; a number must be finite as a Double; nesting beyond
    /// `maximumDepth` and input beyond `maximumBytes` are refused before they cost anything.
    /// A leading UTF-8 byte order mark is skipped. Never traps; the first problem in document
    /// order is the one thrown.
    public init(parsing bytes: some Collection<UInt8>, maximumDepth: Int = defaultMaximumDepth,
                maximumBytes: Int = defaultMaximumBytes) throws(JSONReadError) {
        guard bytes.count <= maximumBytes else {
            throw JSONReadError(kind: .syntax, line: 1, column: 1,
                                problem: "\(bytes.count) bytes of text, more than the \(maximumBytes) accepted")
        }
        var parser = JSONParser(Array(bytes), maximumDepth: maximumDepth)
        self = try parser.document()
    }
}

/// The recursive descent behind `JSONValue(parsing:)`: one pass over the bytes, one level of
/// recursion per level of nesting (bounded by `maximumDepth`).
private struct JSONParser {
    private let input: [UInt8]
    private let maximumDepth: Int
    private var index = 0
    private var depth = 0

    init(_ input: [UInt8], maximumDepth: Int) {
        self.input = input
        self.maximumDepth = maximumDepth
        if input.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    mutating func document() throws(JSONReadError) -> JSONValue {
        skipWhitespace()
        let value = try self.value()
        skipWhitespace()
        guard index == input.count else { throw failure("unexpected \(found) after the JSON value; only whitespace may follow it") }
        return value
    }

    private mutating func value() throws(JSONReadError) -> JSONValue {
        guard index < input.count else { throw failure("expected a value, found the end of the text") }
        switch input[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("expected a value (an object, array, string, number, true, false or null), found \(found)")
        }
    }

    private mutating func object() throws(JSONReadError) -> JSONValue {
        try enter()
        var members: [(String, JSONValue)] = []
        var keys = Set<String>()
        skipWhitespace()
        if take(UInt8(ascii: "}")) { return leave(.object(members)) }
        while true {
            guard index < input.count, input[index] == UInt8(ascii: "\"") else {
                throw failure(members.isEmpty ? "expected a string key or '}', found \(found)" : "expected a string key after ',', found \(found)")
            }
            let keyStart = index
            let key = try string()
            guard keys.insert(key).inserted else {
                throw failure(at: keyStart, kind: .duplicateKey(key), "key \(JSONWriting.quoted(String(key.prefix(64)))) appears more than once in one object")
            }
            skipWhitespace()
            guard take(UInt8(ascii: ":")) else { throw failure("expected ':' after a key, found \(found)") }
            skipWhitespace()
            members.append((key, try value()))
            skipWhitespace()
            if take(UInt8(ascii: "}")) { return leave(.object(members)) }
            guard take(UInt8(ascii: ",")) else { throw failure("expected ',' or '}' after a member, found \(found)") }
            skipWhitespace()
        }
    }

    private mutating func array() throws(JSONReadError) -> JSONValue {
        try enter()
        var elements: [JSONValue] = []
        skipWhitespace()
        if take(UInt8(ascii: "]")) { return leave(.array(elements)) }
        while true {
            elements.append(try value())
            skipWhitespace()
            if take(UInt8(ascii: "]")) { return leave(.array(elements)) }
            guard take(UInt8(ascii: ",")) else { throw failure("expected ',' or ']' after an element, found \(found)") }
            skipWhitespace()
        }
    }

    /// Consumes the opening bracket, counting the level against `maximumDepth`.
    private mutating func enter() throws(JSONReadError) {
        guard depth < maximumDepth else { throw failure("nesting deeper than \(maximumDepth) levels") }
        depth += 1
        index += 1
    }

    private mutating func leave(_ value: JSONValue) -> JSONValue {
        depth -= 1
        return value
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) throws(JSONReadError) -> JSONValue {
        let spelled = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard input[index...].starts(with: spelled) else {
            throw failure("expected a value (an object, array, string, number, true, false or null), found \(found)")
        }
        index += spelled.count
        return value
    }

    /// A number as RFC 8259 spells it: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func number() throws(JSONReadError) -> JSONValue {
        let start = index
        _ = take(UInt8(ascii: "-"))
        if take(UInt8(ascii: "0")) {
            if index < input.count, isDigit(input[index]) { throw failure(at: start, "a number may not start with 0 unless it is 0") }
        } else {
            guard digits() else { throw failure("expected a digit, found \(found)") }
        }
        var isInteger = true
        if take(UInt8(ascii: ".")) {
            isInteger = false
            guard digits() else { throw failure("expected a digit after '.', found \(found)") }
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            isInteger = false
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits() else { throw failure("expected a digit in the exponent, found \(found)") }
        }
        let text = String(decoding: input[start..<index], as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
        guard let double = Double(text), double.isFinite else {
            throw failure(at: start, "the number \(text.prefix(40))\(text.count > 40 ? "..." : "") is too large")
        }
        return .number(double)
    }

    /// Consumes a run of digits; false when there was none.
    private mutating func digits() -> Bool {
        let start = index
        while index < input.count, isDigit(input[index]) { index += 1 }
        return index > start
    }

    /// The string whose opening quote is at `index`, unescaped; `index` ends past its closing quote.
    private mutating func string() throws(JSONReadError) -> String {
        let start = index
        index += 1
        var bytes: [UInt8] = []
        while true {
            guard index < input.count else { throw failure(at: start, "a string that never ends (no closing '\"')") }
            let byte = input[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw failure(at: start, "a string that is not UTF-8 text")
                }
                return text
            case UInt8(ascii: "\\"):
                try escape(into: &bytes)
            case 0..<0x20:
                throw failure("control character U+\(hex(UInt32(byte), width: 4)) inside a string; write it escaped (\\n, \\t, \\u00XX)")
            default:
                bytes.append(byte)
                index += 1
            }
        }
    }

    /// The escape at `index` (its backslash), appended to `bytes` as UTF-8.
    private mutating func escape(into bytes: inout [UInt8]) throws(JSONReadError) {
        let start = index
        index += 1
        guard index < input.count else { throw failure(at: start, "a string that never ends (no closing '\"')") }
        let letter = input[index]
        index += 1
        let simple: UInt8? = switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): letter
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
        if let simple {
            bytes.append(simple)
            return
        }
        guard letter == UInt8(ascii: "u") else {
            throw failure(at: start, "unknown escape \\\(describe(letter)); known: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX")
        }
        var scalar = try hexQuad(escapeAt: start)
        if (0xDC00...0xDFFF).contains(scalar) {
            throw failure(at: start, "\\u\(hex(scalar, width: 4)) is the second half of a surrogate pair without the first")
        }
        if (0xD800...0xDBFF).contains(scalar) {
            guard input[index...].starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "u")]) else {
                throw failure(at: start, "\\u\(hex(scalar, width: 4)) is the first half of a surrogate pair without the second")
            }
            index += 2
            let low = try hexQuad(escapeAt: index - 2)
            guard (0xDC00...0xDFFF).contains(low) else {
                throw failure(at: start, "\\u\(hex(scalar, width: 4)) is the first half of a surrogate pair without the second")
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        // Not a surrogate, so a valid scalar.
        bytes.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
    }

    /// The four hex digits at `index`, consumed.
    private mutating func hexQuad(escapeAt start: Int) throws(JSONReadError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < input.count, let digit = hexDigit(input[index]) else {
                throw failure(at: start, "\\u must be followed by four hex digits")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func skipWhitespace() {
        while index < input.count, [0x20, 0x09, 0x0A, 0x0D].contains(input[index]) { index += 1 }
    }

    /// Consumes `byte` when it is next.
    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < input.count, input[index] == byte else { return false }
        index += 1
        return true
    }

    /// What stands at `index`, in words.
    private var found: String {
        index < input.count ? describe(input[index]) : "the end of the text"
    }

    private func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(hex(UInt32(byte), width: 2))"
    }

    private func failure(at offset: Int? = nil, kind: JSONReadError.Kind = .syntax, _ problem: String) -> JSONReadError {
        let offset = min(offset ?? index, input.count)
        var line = 1
        var lineStart = 0
        for position in 0..<offset where input[position] == 0x0A {
            line += 1
            lineStart = position + 1
        }
        return JSONReadError(kind: kind, line: line, column: offset - lineStart + 1, problem: problem)
    }

    private func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
