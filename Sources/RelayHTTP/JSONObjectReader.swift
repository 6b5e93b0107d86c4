import JSONSyntax

/// Strict, typed reading of a JSON object request body, through JSONSyntax's reader.
///
/// Contract: `init` accepts only a JSON object (an empty body counts as `{}`, so a POST with
/// every field defaulted needs no body) and, when `allowedKeys` is given, refuses any other
/// key by name, and refuses a key given twice in any object (naming it). Each getter returns
/// nil when the key is absent and throws a `JSONObjectError` naming the field, the expected
/// type and the value when it is present but wrong; `null` is a wrong value, not an absent
/// one. Booleans, fractions and exponents are never integers. The body's size is the HTTP
/// server's bound (`HTTPLimits.maxBodyBytes`); its nesting is the reader's.
public struct JSONObjectReader {
    public let object: [String: JSONValue]

    public init(_ body: [UInt8], allowedKeys: Set<String>? = nil) throws(JSONObjectError) {
        let isBlank = body.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let parsed: JSONValue
        do {
            parsed = isBlank ? .object([]) : try JSONValue(parsing: body)
        } catch {
            if case .duplicateKey(let key) = error.kind {
                throw JSONObjectError(field: key, description: "field \"\(key.prefix(64))\" appears more than once; give each field once")
            }
            throw JSONObjectError(field: nil, description: "body is not valid JSON (\(error))")
        }
        guard let members = parsed.members else {
            throw JSONObjectError(field: nil, description: "body must be a JSON object")
        }
        // The reader refused equal keys, so every key is new here.
        let object = Dictionary(members, uniquingKeysWith: { first, _ in first })
        if let allowedKeys, let unknown = object.keys.sorted().first(where: { !allowedKeys.contains($0) }) {
            throw JSONObjectError(
                field: unknown,
                description: "unknown field \"\(unknown)\"; known fields: \(allowedKeys.sorted().joined(separator: ", "))")
        }
        self.object = object
    }

    public func contains(_ key: String) -> Bool {
        object[key] != nil
    }

    /// An integer, within `range` when one is given.
    public func int(_ key: String, range: ClosedRange<Int>? = nil) throws(JSONObjectError) -> Int? {
        guard let value = object[key] else { return nil }
        let expected = range.map { "an integer in \($0.lowerBound)...\($0.upperBound)" } ?? "an integer"
        guard let integer = value.integer.flatMap({ Int(exactly: $0) }) else { throw wrong(key, expected, value) }
        if let range, !range.contains(integer) { throw wrong(key, expected, value) }
        return integer
    }

    /// A boolean; numbers 0 and 1 are not booleans.
    public func bool(_ key: String) throws(JSONObjectError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard let bool = value.bool else { throw wrong(key, "true or false", value) }
        return bool
    }

    /// A string, one of `oneOf` when given.
    public func string(_ key: String, oneOf choices: [String]? = nil) throws(JSONObjectError) -> String? {
        guard let value = object[key] else { return nil }
        let expected = choices.map { "one of " + $0.map { "\"\($0)\"" }.joined(separator: ", ") } ?? "a string"
        guard let text = value.string else { throw wrong(key, expected, value) }
        if let choices, !choices.contains(text) { throw wrong(key, expected, value) }
        return text
    }

    /// An array whose elements are all strings.
    public func stringArray(_ key: String) throws(JSONObjectError) -> [String]? {
        guard let value = object[key] else { return nil }
        guard let array = value.elements else { throw wrong(key, "an array of strings", value) }
        var strings: [String] = []
        for (index, element) in array.enumerated() {
            guard let text = element.string else {
                throw JSONObjectError(
                    field: key,
                    description: "field \"\(key)\" must be an array of strings, element \(index) is \(JSONObjectReader.describe(element))")
            }
            strings.append(text)
        }
        return strings
    }

    private func wrong(_ key: String, _ expected: String, _ value: JSONValue) -> JSONObjectError {
        JSONObjectError(field: key, description: "field \"\(key)\" must be \(expected), got \(JSONObjectReader.describe(value))")
    }

    /// The value as the client wrote it, shortened: errors must not echo a megabyte back.
    static func describe(_ value: JSONValue) -> String {
        let text = switch value {
        case .null, .bool, .integer, .number: value.rendered
        case .string(let string): "\"\(string)\""
        case .array: "an array"
        case .object: "an object"
        }
        return text.count > 60 ? String(text.prefix(57)) + "..." : text
    }
}
