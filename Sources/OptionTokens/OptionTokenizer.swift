/// One option as a command line gave it: its flag and, for a flag that takes one, its value.
public struct OptionToken: Sendable, Equatable {
    public let flag: String
    /// nil for a flag that takes no value (a switch such as `--help`).
    public let value: String?

    public init(flag: String, value: String?) {
        self.flag = flag
        self.value = value
    }
}

/// Why a command line could not be cut into options. Each executable words it for its user
/// (the relay and the load generator say the same things in their own forms).
public enum OptionTokenError: Error, Equatable, Sendable {
    /// An argument that is not an option (no leading `-`).
    case unexpectedArgument(String)
    /// A flag the executable does not know.
    case unknownOption(String)
    /// A flag that takes a value, given none (the line ended, or the next argument is a flag).
    case missingValue(String)
    /// A switch given a value with `=`.
    case valueNotTaken(String)
}

/// Cuts a command line into options, the one way both executables read theirs: `--flag value`
/// or `--flag=value` for a flag that takes a value (a separate value may not start with `--`,
/// so a forgotten value is reported, not the next flag taken for it), `--flag` alone for a
/// switch. What each flag means, and which may repeat, is the caller's table.
public enum OptionTokenizer {
    /// - Parameter takesValue: whether `flag` takes a value; nil for a flag the caller does not know.
    public static func tokens(_ arguments: [String], takesValue: (String) -> Bool?) throws(OptionTokenError) -> [OptionToken] {
        var tokens: [OptionToken] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-"), argument.count > 1 else { throw .unexpectedArgument(argument) }
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let flag = String(parts[0])
            var value: String? = parts.count == 2 ? String(parts[1]) : nil
            guard let wantsValue = takesValue(flag) else { throw .unknownOption(flag) }
            guard wantsValue else {
                guard value == nil else { throw .valueNotTaken(flag) }
                tokens.append(OptionToken(flag: flag, value: nil))
                continue
            }
            if value == nil, index < arguments.endIndex, !arguments[index].hasPrefix("--") {
                value = arguments[index]
                index += 1
            }
            guard let value else { throw .missingValue(flag) }
            tokens.append(OptionToken(flag: flag, value: value))
        }
        return tokens
    }
}
