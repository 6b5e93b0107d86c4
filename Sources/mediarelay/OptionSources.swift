/// Where each option's value came from, for errors found after the flags and the file were
/// merged: a value the config file gave is named by its file and key, as the operator wrote
/// it, not by a flag the operator never typed.
struct OptionSources {
    let configPath: String?
    /// The keys the config file set and no flag replaced.
    let fromConfig: Set<OptionKey>

    private static let byFlag = Dictionary(uniqueKeysWithValues: OptionKey.allCases.map { ($0.flag, $0) })

    /// `--turn-users-file`, or `config FILE: key "turn_users_file"`.
    func name(of key: OptionKey) -> String {
        guard let configPath, fromConfig.contains(key) else { return key.flag }
        return "config \(OptionError.quoted(configPath)): key \"\(key.configKey)\""
    }

    /// `error` with its leading flag named as `name(of:)` names it; the rest of its subject
    /// (the value) follows after a colon.
    func naming(_ error: OptionError) -> OptionError {
        let words = error.subject.split(separator: " ", maxSplits: 1)
        guard let first = words.first, let key = Self.byFlag[String(first)], fromConfig.contains(key) else { return error }
        let rest = words.count > 1 ? ": " + words[1] : ""
        return OptionError(subject: name(of: key) + rest, problem: error.problem)
    }
}
