/// Finds a key given twice in one JSON object, which JSON parsers otherwise resolve silently
/// (JSONSerialization keeps the last, JSONDecoder one of them).
///
/// Contract: total over any bytes (never traps, no recursion, so nesting depth cannot exhaust
/// the stack) and linear in their length; meant to run before the real parser, which reports
/// whatever else is wrong. Keys are compared after unescaping, as Swift strings (so `"a"` and
/// `"\u0061"` are the same key, as are canonically equivalent spellings that a Swift
/// dictionary could not hold apart). Objects at every depth are checked; the same key in two
/// different objects is fine.
public enum JSONDuplicateKey {
    /// The first repeated key, in document order, or nil when every object's keys are distinct.
    public static func first(in bytes: some Collection<UInt8>) -> String? {
        let input = Array(bytes)
        // One entry per open container: the keys seen so far for an object, nil for an array.
        var open: [Set<String>?] = []
        var index = 0
        while index < input.count {
            switch input[index] {
            case UInt8(ascii: "{"):
                open.append([])
                index += 1
            case UInt8(ascii: "["):
                open.append(nil)
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                _ = open.popLast()
                index += 1
            case UInt8(ascii: "\""):
                let (text, end) = string(input, from: index + 1)
                index = end
                // A string is a key when a colon follows it inside an object.
                var next = index
                while next < input.count, isWhitespace(input[next]) { next += 1 }
                if next < input.count, input[next] == UInt8(ascii: ":"), let last = open.indices.last, open[last] != nil {
                    if !open[last]!.insert(text).inserted { return text }
                }
            default:
                index += 1
            }
        }
        return nil
    }

    /// The unescaped text of the string whose contents start at `start`, and the index just past
    /// its closing quote (or the end of the input when it has none).
    private static func string(_ input: [UInt8], from start: Int) -> (String, Int) {
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        var index = start
        var pendingHighSurrogate: UInt32?
        func flushRaw() {
            scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
            raw.removeAll(keepingCapacity: true)
        }
        func append(_ value: UInt32) {
            if let high = pendingHighSurrogate {
                pendingHighSurrogate = nil
                if (0xDC00...0xDFFF).contains(value) {
                    scalars.append(Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00))!)
                    return
                }
                scalars.append("\u{FFFD}")
            }
            if (0xD800...0xDBFF).contains(value) {
                pendingHighSurrogate = value
            } else {
                scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
            }
        }
        while index < input.count, input[index] != UInt8(ascii: "\"") {
            let byte = input[index]
            guard byte == UInt8(ascii: "\\"), index + 1 < input.count else {
                if pendingHighSurrogate != nil {
                    // A lone high surrogate; `raw` is empty here, as an escape came just before.
                    scalars.append("\u{FFFD}")
                    pendingHighSurrogate = nil
                }
                raw.append(byte)
                index += 1
                continue
            }
            flushRaw()
            let escaped = input[index + 1]
            index += 2
            switch escaped {
            case UInt8(ascii: "u"):
                let digits = input[index..<min(index + 4, input.count)]
                let value = UInt32(String(decoding: digits, as: UTF8.self), radix: 16) ?? 0xFFFD
                index = min(index + 4, input.count)
                append(value)
                continue
            case UInt8(ascii: "b"): append(0x08)
            case UInt8(ascii: "f"): append(0x0C)
            case UInt8(ascii: "n"): append(0x0A)
            case UInt8(ascii: "r"): append(0x0D)
            case UInt8(ascii: "t"): append(0x09)
            default: append(UInt32(escaped))
            }
        }
        flushRaw()
        if pendingHighSurrogate != nil { scalars.append("\u{FFFD}") }
        return (String(scalars), min(index + 1, input.count))
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
