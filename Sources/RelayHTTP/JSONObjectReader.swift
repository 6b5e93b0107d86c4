import Foundation
import JSONSyntax

/// Strict, typed reading of a JSON object request body.
///
/// Contract: `init` accepts only a JSON object (an empty body counts as `{}`, so a POST with
/// every field defaulted needs no body) and, when `allowedKeys` is given, refuses any other
/// key by name, and refuses a key given twice in any object (naming it). Each getter returns nil when the key is absent and throws a
/// `JSONObjectError` naming the field, the expected type and the value when it is present but
/// wrong; `null` is a wrong value, not an absent one. Booleans and fractional numbers are never
/// integers, although JSONSerialization hands all three back as NSNumber.
public struct JSONObjectReader {
    public let object: [String: Any]

    public init(_ body: [UInt8], allowedKeys: Set<String>? = nil) throws(JSONObjectError) {
        try self.init(Data(body), allowedKeys: allowedKeys)
    }

    public init(_ data: Data, allowedKeys: Set<String>? = nil) throws(JSONObjectError) {
        let isBlank = data.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let parsed: Any
        if isBlank {
            parsed = [String: Any]()
        } else {
            // Before parsing: JSONSerialization keeps the last of two equal keys without a word,
            // and keys that differ as bytes but not as Swift strings could not both live in the
            // dictionary the object becomes.
            if let key = JSONDuplicateKey.first(in: data) {
                throw JSONObjectError(field: key, description: "field \"\(key.prefix(64))\" appears more than once; give each field once")
            }
            // fragmentsAllowed, so that `3` or `"x"` is told "must be a JSON object" rather
            // than the less helpful "not valid JSON".
            guard let value = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
                throw JSONObjectError(field: nil, description: "body is not valid JSON")
            }
            parsed = value
        }
        guard let object = parsed as? [String: Any] else {
            throw JSONObjectError(field: nil, description: "body must be a JSON object")
        }
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
        guard let number = value as? NSNumber, let integer = JSONObjectReader.exactInteger(number) else {
            throw wrong(key, expected, value)
        }
        if let range, !range.contains(integer) { throw wrong(key, expected, value) }
        return integer
    }

    /// A boolean; numbers 0 and 1 are not booleans.
    public func bool(_ key: String) throws(JSONObjectError) -> Bool? {
        guard let value = object[key] else { return nil }
        guard let number = value as? NSNumber, JSONObjectReader.isBoolean(number) else {
            throw wrong(key, "true or false", value)
        }
        return number.boolValue
    }

    /// A string, one of `oneOf` when given.
    public func string(_ key: String, oneOf choices: [String]? = nil) throws(JSONObjectError) -> String? {
        guard let value = object[key] else { return nil }
        let expected = choices.map { "one of " + $0.map { "\"\($0)\"" }.joined(separator: ", ") } ?? "a string"
        guard let text = value as? String else { throw wrong(key, expected, value) }
        if let choices, !choices.contains(text) { throw wrong(key, expected, value) }
        return text
    }

    /// An array whose elements are all strings.
    public func stringArray(_ key: String) throws(JSONObjectError) -> [String]? {
        guard let value = object[key] else { return nil }
        guard let array = value as? [Any] else { throw wrong(key, "an array of strings", value) }
        var strings: [String] = []
        for (index, element) in array.enumerated() {
            guard let text = element as? String else {
                throw JSONObjectError(
                    field: key,
                    description: "field \"\(key)\" must be an array of strings, element \(index) is \(JSONObjectReader.describe(element))")
            }
            strings.append(text)
        }
        return strings
    }

    private func wrong(_ key: String, _ expected: String, _ value: Any) -> JSONObjectError {
        JSONObjectError(field: key, description: "field \"\(key)\" must be \(expected), got \(JSONObjectReader.describe(value))")
    }

    /// JSONSerialization gives booleans as NSNumber whose Objective-C type is "c" (char).
    static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    /// The integer a JSON number spelled as an integer, or nil for booleans, numbers written
    /// with a fraction or exponent ("d"), and integers beyond Int.
    static func exactInteger(_ number: NSNumber) -> Int? {
        switch String(cString: number.objCType) {
        case "s", "i", "l", "q": return Int(exactly: number.int64Value)
        case "S", "I", "L", "Q": return Int(exactly: number.uint64Value)
        default: return nil
        }
    }

    /// The value as the client wrote it, shortened: errors must not echo a megabyte back.
    static func describe(_ value: Any) -> String {
        let text: String
        switch value {
        case let number as NSNumber where isBoolean(number): text = number.boolValue ? "true" : "false"
        case let number as NSNumber: text = number.stringValue
        case let string as String: text = "\"\(string)\""
        case is NSNull: text = "null"
        case is [Any]: text = "an array"
        case is [String: Any]: text = "an object"
        default: text = "a value of another type"
        }
        return text.count > 60 ? String(text.prefix(57)) + "..." : text
    }
}
