/// The pieces of JSON text every writer in the package shares: a string escaped as RFC 8259
/// requires (`"`, `\` and the control characters below U+0020; everything else written as
/// UTF-8) and a number in the form JSONSerialization writes (whole numbers without a fraction,
/// others in Swift's shortest form that reads back to the same Double). The relay's API
/// (RelayHTTP's JSONText, keys sorted) and `JSONValue.rendered` (the load generator's results,
/// members in order) differ in how they order an object, never in how a value is written.
/// In JSONSyntax, a leaf: no imports, no Foundation.
public enum JSONWriting {
    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `string` as a JSON string, quotes included.
    public static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `string` as a JSON string, quotes included.
    public static func quoted(_ string: String) -> String {
        var out: [UInt8] = []
        appendString(string, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// A finite `double` as JSON writes it; the caller decides what a non-finite one becomes
    /// (JSON has no NaN).
    public static func number(_ double: Double) -> String {
        if double == double.rounded(), abs(double) < 1e15 { return String(Int64(double)) }
        return String(double)
    }
}
