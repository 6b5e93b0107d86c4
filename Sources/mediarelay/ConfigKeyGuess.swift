/// The config key a mistyped one most likely meant: the closest by edit distance, once a
/// flag's spelling (`--relay-address`) is turned into a key's (`relay_address`); none when
/// even the closest differs in more than a third of its letters (a guess that far off would
/// mislead more than help).
enum ConfigKeyGuess {
    static func nearest(to typed: String) -> OptionKey? {
        let spelled = Array(typed.lowercased().drop { $0 == "-" }.map { $0 == "-" ? "_" : $0 })
        var best: (key: OptionKey, distance: Int)?
        for key in OptionKey.allCases {
            let distance = editDistance(spelled, Array(key.configKey))
            if distance < best?.distance ?? Int.max { best = (key, distance) }
        }
        guard let best, best.distance <= max(2, best.key.configKey.count / 3) else { return nil }
        return best.key
    }

    /// Insertions, deletions and substitutions (Levenshtein), one row kept at a time.
    static func editDistance(_ from: [Character], _ to: [Character]) -> Int {
        guard !from.isEmpty else { return to.count }
        var previous = Array(0...to.count)
        var current = previous
        for i in 1...from.count {
            current[0] = i
            for j in stride(from: 1, through: to.count, by: 1) {
                let substitution = previous[j - 1] + (from[i - 1] == to[j - 1] ? 0 : 1)
                current[j] = min(substitution, previous[j] + 1, current[j - 1] + 1)
            }
            swap(&previous, &current)
        }
        return previous[to.count]
    }
}
