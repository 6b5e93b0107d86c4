import Foundation
import JSONSyntax

/// The JSON config file given with `--config FILE`: one object whose keys are the options'
/// config keys (`engine`, `forward`, `idle_timeout_seconds`, ...). Integers and fractions are
/// JSON numbers, lists (`forward`, `turn_alternates`, ...) arrays of strings, everything else a
/// string written as on the command line.
enum ConfigFile {
    /// A config is a few hundred bytes; anything near this is not a config file.
    static let maxBytes = 1 << 20

    /// Reads at most `maxBytes + 1` bytes of a regular file, so a huge file never gets read
    /// whole; FIFOs, directories and devices are refused without waiting on them.
    static func read(_ path: String) throws -> Data {
        try ConfigFileReader.read(path, limit: maxBytes + 1)
    }

    /// Reads a file given to an option (the config, the TURN users file), refusing one larger
    /// than `maxBytes` with an error naming `subject`.
    static func readSmallFile(
        _ path: String, subject: String, expected: String, readFile: (String) throws -> Data
    ) throws(OptionError) -> Data {
        let data: Data
        do {
            data = try readFile(path)
        } catch let failure as ConfigFileReader.Failure {
            throw OptionError(subject: subject, problem: "\(failure.description); expected \(expected)")
        } catch {
            throw OptionError(subject: subject, problem: "cannot read it (\(error)); expected \(expected)")
        }
        guard data.count <= maxBytes else {
            throw OptionError(subject: subject, problem: "larger than 1 MiB; expected \(expected) of at most 1 MiB")
        }
        return data
    }

    /// Reads the file and parses it (JSONSyntax's reader) into its top-level object.
    static func load(path: String, readFile: (String) throws -> Data) throws(OptionError) -> [String: JSONValue] {
        let subject = "config \(OptionError.quoted(path))"
        let data = try readSmallFile(path, subject: subject, expected: "a readable JSON file", readFile: readFile)
        let value: JSONValue
        do {
            value = try JSONValue(parsing: data)
        } catch {
            // Other parsers keep one of two equal keys without a word; either choice could
            // silently run a setting the operator did not mean.
            if case .duplicateKey(let key) = error.kind {
                throw OptionError(subject: "\(subject): key \"\(OptionError.quoted(key))\"", problem: "appears more than once; give each key once")
            }
            throw OptionError(subject: subject, problem: "not valid JSON (\(error))")
        }
        guard let members = value.members else {
            throw OptionError(subject: subject, problem: "expected a JSON object at the top level, got \(value.typeName)")
        }
        return Dictionary(members, uniquingKeysWith: { first, _ in first })
    }

    /// Applies every key of `object` to `options` and returns which options it set.
    static func apply(
        _ object: [String: JSONValue], path: String, to options: inout ServerOptions
    ) throws(OptionError) -> Set<OptionKey> {
        let keys = Dictionary(uniqueKeysWithValues: OptionKey.allCases.map { ($0.configKey, $0) })
        var given = Set<OptionKey>()
        // Sorted so that a file with several mistakes always reports the same one first.
        for name in object.keys.sorted() {
            let subject = "config \(OptionError.quoted(path)): key \"\(OptionError.quoted(name))\""
            guard let key = keys[name] else {
                let guess = ConfigKeyGuess.nearest(to: name).map { "did you mean \"\($0.configKey)\"? " } ?? ""
                throw OptionError(subject: subject, problem: "unknown key; \(guess)mediarelay --help lists every key")
            }
            let texts = try strings(object[name]!, for: key, subject: subject)
            if key.isRepeatable {
                key.clearList(in: &options)
                guard texts.count <= key.maxCount else {
                    throw OptionError(subject: subject, problem: "\(texts.count) values; at most \(key.maxCount) are accepted")
                }
            }
            for text in texts {
                do throws(ValueProblem) {
                    try key.apply(key.isPath ? resolve(text, against: path) : text, to: &options)
                } catch {
                    if text.isEmpty { throw OptionError(subject: subject, problem: OptionKey.emptyValue(error)) }
                    let shown = key.isSecret ? "(value hidden)" : OptionError.quoted(text)
                    throw OptionError(subject: subject, problem: "\(shown): \(error.expected)")
                }
            }
            given.insert(key)
        }
        return given
    }

    /// A relative path in the file is the file's directory's, as the operator who wrote it
    /// beside the config meant (not the directory the relay happens to start in).
    static func resolve(_ value: String, against configPath: String) -> String {
        guard !value.isEmpty, !value.hasPrefix("/"), let slash = configPath.lastIndex(of: "/") else { return value }
        return String(configPath[...slash]) + value
    }

    /// The value as the text the flag would take, after checking its JSON type.
    private static func strings(_ value: JSONValue, for key: OptionKey, subject: String) throws(OptionError) -> [String] {
        switch (key.configType, value) {
        case (.string, .string(let text)):
            return [text]
        case (.integer, .integer(let number)), (.number, .integer(let number)):
            return [String(number)]
        case (.number, .number(let number)):
            return [String(number)]
        case (.stringArray, .array(let items)):
            var texts: [String] = []
            for item in items {
                guard case .string(let text) = item else {
                    throw OptionError(subject: subject, problem: "expected an array of strings, found \(item.typeName) in it")
                }
                texts.append(text)
            }
            return texts
        default:
            let wanted = switch key.configType {
            case .string: "a string"
            case .integer: "an integer"
            case .number: "a number"
            case .stringArray: "an array of strings"
            }
            // 2.0 and 1e3 are not integers as JSON spells them: say which number, as "got a
            // number" alone would puzzle whoever was asked for an integer.
            let got = if case .number(let number) = value { "a number with a fraction or exponent (\(number))" } else { value.typeName }
            throw OptionError(subject: subject, problem: "expected \(wanted) (\(key.accepted)), got \(got)")
        }
    }
}
