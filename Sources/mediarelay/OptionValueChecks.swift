import NetAddress
import RelayCore

/// Parsing of one option value: each check throws what was expected, for the one-line error.
extension OptionKey {
    static func range(_ text: String) throws(ValueProblem) -> AddressRange {
        do throws(AddressRangeError) {
            return try AddressRange(cidr: text)
        } catch {
            throw ValueProblem(expected: "\(error.problem); expected a CIDR block such as 192.0.2.0/24 or 2001:db8::/32")
        }
    }

    /// A file name: not empty, no NUL (whether it can be read is checked at start).
    static func path(_ text: String, expected: String) throws(ValueProblem) -> String {
        guard !text.isEmpty, text.utf8.count <= 4096, !text.utf8.contains(0) else { throw ValueProblem(expected: "expected \(expected)") }
        return text
    }

    /// The token travels in an `Authorization: Bearer` header, so spaces and control
    /// characters could never match.
    static func token(_ text: String) throws(ValueProblem) -> String {
        try visibleASCII(text, expected: OptionKey.controlToken.accepted)
    }

    /// 1...maxTokenLength visible ASCII characters: tokens and secrets are typed and pasted, and
    /// a space or control character in one is a copy mistake.
    static func visibleASCII(_ text: String, expected: String) throws(ValueProblem) -> String {
        let visible = text.utf8.allSatisfy { (0x21...0x7e).contains($0) }
        guard !text.isEmpty, text.utf8.count <= maxTokenLength, visible else {
            throw ValueProblem(expected: "expected \(expected)")
        }
        return text
    }

    func choice<Choice: RawRepresentable & CaseIterable>(_ text: String) throws(ValueProblem) -> Choice
    where Choice.RawValue == String {
        guard let value = Choice(rawValue: text) else {
            throw ValueProblem(expected: "expected \(accepted)")
        }
        return value
    }

    func onOff(_ text: String) throws(ValueProblem) -> Bool {
        switch text {
        case "on": true
        case "off": false
        default: throw ValueProblem(expected: "expected one of on, off")
        }
    }

    func integer(_ text: String, in range: ClosedRange<Int>) throws(ValueProblem) -> Int {
        guard text.utf8.count <= 12, text.allSatisfy({ $0.isASCII && $0.isNumber }),
            let value = Int(text), range.contains(value)
        else { throw ValueProblem(expected: "expected \(accepted)") }
        return value
    }

    /// Plain decimal notation only: "1e-1" or "nan" in a config is a mistake, not a number.
    func fraction(_ text: String) throws(ValueProblem) -> Double {
        guard text.utf8.count <= 12, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let value = Double(text), value > 0, value <= 1
        else { throw ValueProblem(expected: "expected \(accepted)") }
        return value
    }

    func address(_ text: String) throws(ValueProblem) -> String {
        guard IPLiteral.isIPv4(text) || IPLiteral.isIPv6(text) else {
            throw ValueProblem(expected: "expected \(IPLiteral.expected)")
        }
        return text
    }
}
