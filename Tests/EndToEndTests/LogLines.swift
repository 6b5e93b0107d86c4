import Foundation
import XCTest

/// The relay's log lines with one message (`accounting`, `TURN authentication failed`...) read
/// back from its stderr, in either `--log-format`, as text fields: a number as its digits, ECN
/// counts as `a,b,c,d`, drops as `reason:count,...` sorted by reason. Read with code of its own
/// (a small key=value scanner, Foundation's JSON parser), not the relay's formatter.
enum LogLines {
    /// Every line of `message` in `log`, each as its fields (`msg` and `level` included).
    static func all(in log: String, message: String) -> [[String: String]] {
        log.split(separator: "\n").compactMap { line in
            if line.hasPrefix("{") { return json(String(line)) }
            guard line.hasPrefix("mediarelay["), let close = line.firstIndex(of: "]") else { return nil }
            let level = String(line[line.index(line.startIndex, offsetBy: "mediarelay[".count)..<close])
            let rest = line[line.index(after: close)...].dropFirst()
            guard rest.hasPrefix(message + " ") else { return nil }
            return text(rest.dropFirst(message.count + 1), message: message, level: level)
        }.filter { $0["msg"] == message }
    }

    /// The first line of `message` that `matches`, once it has appeared (nil after a generous wait).
    static func wait(_ relay: RelayProcess, message: String, seconds: Double = 20,
                     _ matches: ([String: String]) -> Bool = { _ in true }) -> [String: String]? {
        var found: [String: String]?
        _ = eventually(seconds: seconds) {
            found = all(in: relay.log, message: message).first(where: matches)
            return found != nil
        }
        return found
    }

    /// `k=v k="quoted \"json\" string" ...` after the message.
    private static func text(_ fieldsText: Substring, message: String, level: String) -> [String: String]? {
        var fields = ["msg": message, "level": level]
        var rest = fieldsText
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let key = String(rest[..<equals])
            rest = rest[rest.index(after: equals)...]
            if rest.first == "\"" {
                // The quoted value ends at the first quote not escaped by a backslash.
                var index = rest.index(after: rest.startIndex)
                while index < rest.endIndex && rest[index] != "\"" {
                    if rest[index] == "\\" { index = rest.index(after: index) }
                    index = rest.index(after: index)
                }
                guard index < rest.endIndex else { return nil }
                let quoted = String(rest[...index])
                guard let value = try? JSONSerialization.jsonObject(with: Data(quoted.utf8), options: .fragmentsAllowed) as? String else {
                    return nil
                }
                fields[key] = value
                rest = rest[rest.index(after: index)...]
            } else {
                let end = rest.firstIndex(of: " ") ?? rest.endIndex
                fields[key] = String(rest[..<end])
                rest = rest[end...]
            }
            rest = rest.drop { $0 == " " }
        }
        if let drops = fields["drops"] { fields["drops"] = drops.split(separator: ",").sorted().joined(separator: ",") }
        return fields
    }

    private static func json(_ line: String) -> [String: String]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        var fields: [String: String] = [:]
        for (key, value) in object {
            switch value {
            case let counts as [String: Any]:
                fields[key] = counts.map { "\($0.key):\($0.value)" }.sorted().joined(separator: ",")
            case let numbers as [Any]:
                fields[key] = numbers.map { "\($0)" }.joined(separator: ",")
            default:
                fields[key] = "\(value)"
            }
        }
        return fields
    }
}
