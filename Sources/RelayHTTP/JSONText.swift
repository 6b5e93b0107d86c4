import Foundation
import JSONSyntax

/// Compact JSON text for the API's responses: objects with their keys sorted (stable output
/// for tests and diffs), "/" left unescaped, no whitespace.
///
/// Why not Foundation's JSONSerialization: with sorted keys it compares every pair of keys
/// through NSString with a locale (ICU collation) and bridges every value, so one /v1/stats of
/// 4 KB cost the relay 4.8 ms of CPU (perf: 44% in the key sort), more than a scrape of the
/// 18 KB /metrics. This walks the same values once.
///
/// Contract: takes what the handlers build: `[String: Any]`, `[Any]`, `String`, `Bool`, any
/// fixed-width integer, `Double`, `Float`, `NSNumber` and `NSNull` (null). Returns nil for
/// anything else and for a non-finite number, which JSON cannot carry, so the caller answers
/// 500 instead of sending invalid JSON. Keys are sorted by
/// Unicode scalar values (byte order for the ASCII keys the API has). Strings and numbers are
/// written by JSONWriting, the package's one way to write a JSON value (the executable's log
/// lines use it too). Nesting is bounded (`maximumDepth`) so a value that contains itself
/// cannot recurse without end.
enum JSONText {
    static let maximumDepth = 64

    static func encode(_ object: [String: Any]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        return write(object, into: &out, depth: 0) ? out : nil
    }

    private static func write(_ value: Any, into out: inout [UInt8], depth: Int) -> Bool {
        guard depth < maximumDepth else { return false }
        switch value {
        case let object as [String: Any]:
            out.append(UInt8(ascii: "{"))
            for (index, key) in object.keys.sorted(by: { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriting.appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                guard write(object[key]!, into: &out, depth: depth + 1) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        case let array as [Any]:
            out.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                guard write(element, into: &out, depth: depth + 1) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case let string as String:
            JSONWriting.appendString(string, to: &out)
        case let bool as Bool:
            out.append(contentsOf: (bool ? "true" : "false").utf8)
        case let integer as any FixedWidthInteger:
            out.append(contentsOf: String(integer).utf8)
        case let double as Double:
            guard double.isFinite else { return false }
            out.append(contentsOf: JSONWriting.number(double).utf8)
        case let float as Float:
            guard float.isFinite else { return false }
            out.append(contentsOf: JSONWriting.number(Double(float)).utf8)
        case is NSNull:
            out.append(contentsOf: "null".utf8)
        case let number as NSNumber:
            // Foundation hands booleans back as NSNumber whose Objective-C type is "c" (char).
            switch String(cString: number.objCType) {
            case "c": return write(number.boolValue, into: &out, depth: depth)
            case "s", "i", "l", "q": return write(number.int64Value, into: &out, depth: depth)
            case "S", "I", "L", "Q": return write(number.uint64Value, into: &out, depth: depth)
            default: return write(number.doubleValue, into: &out, depth: depth)
            }
        default:
            return false
        }
        return true
    }
}
